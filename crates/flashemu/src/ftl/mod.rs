//! Conventional page-mapping FTL, shared by the plain, multi-stream and FDP interfaces.
//!
//! Data structures (all flat, allocated once, nothing allocated per write):
//! - `l2p[lba]`: physical slot of each logical block, or `UNMAPPED`.
//! - `valid_bits`: one bit per physical slot, set while it holds its LBA's current copy.
//! - `p2l[slot]`: logical block last programmed into each physical slot; meaningful only while
//!   the slot's valid bit is set. GC walks a victim's valid bits and reads `p2l` for those.
//! - per superblock: `valid` count, `state` (free / open / sealed), `owner` handle, the clock
//!   when it was sealed (FIFO order and cost-benefit age) and its erase count.
//! - a FIFO `free` pool (erased superblocks go to the back: simple wear levelling).
//! - one open superblock per host handle (stream or RUH) and one per GC destination.
//!
//! Host writes append to their handle's open superblock; GC copies append to a GC superblock,
//! never the host's, so GC data (old, cold) does not mix with fresh host data.
use std::collections::VecDeque;

use crate::config::{Config, FdpIsolation, GcConfig, Interface};
use crate::counters::Counters;
use crate::error::EmuError;
use crate::layout::Layout;
use crate::rng::SplitMix64;

mod buckets;
pub(crate) mod gc;
pub(crate) mod plan;
mod prefetch;
mod valid_bits;

use buckets::ValidBuckets;
pub(crate) use plan::reserved_blocks as plan_reserved_blocks;
use valid_bits::ValidBits;

/// `l2p` entry of an LBA never written or trimmed.
pub(crate) const UNMAPPED: u32 = u32::MAX;
/// Owner of GC superblocks that all handles share (initially isolated FDP, plain SSD).
pub(crate) const OWNER_SHARED: u16 = u16::MAX;
const NO_SUPERBLOCK: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuperblockState {
    Free,
    Open,
    Sealed,
}

/// An open superblock and the next slot offset to program in it. The absent value has
/// `next_offset = u32::MAX` so the hot path's single "is there room" compare also catches it.
#[derive(Debug, Clone, Copy)]
struct OpenSuperblock {
    superblock: u32,
    next_offset: u32,
}

impl OpenSuperblock {
    const NONE: OpenSuperblock =
        OpenSuperblock { superblock: NO_SUPERBLOCK, next_offset: u32::MAX };
}

#[derive(Debug)]
pub(crate) struct Ftl {
    slots_per_superblock: u32,
    /// log2(slots_per_superblock) when it is a power of two (the presets), else u32::MAX: the
    /// hot path then shifts instead of dividing.
    superblock_shift: u32,
    /// slots_per_page - 1; slots_per_page is 1 or 4, so a page completes when the next offset
    /// is a multiple of it.
    page_mask: u32,
    flash_page_bytes: u64,
    blocks_per_superblock: u32,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid_bits: ValidBits,
    valid: Vec<u32>,
    state: Vec<SuperblockState>,
    owner: Vec<u16>,
    sealed_at: Vec<u64>,
    erases: Vec<u32>,
    /// Sealed superblocks by valid count, for greedy victim choice.
    buckets: ValidBuckets,
    free: VecDeque<u32>,
    host_open: Vec<OpenSuperblock>,
    gc_open: Vec<OpenSuperblock>,
    gc_config: GcConfig,
    gc_free_target: u32,
    rng: SplitMix64,
    /// Slots programmed so far (host + GC): the clock of FIFO order and cost-benefit age.
    clock: u64,
}

impl Ftl {
    pub(crate) fn new(config: &Config, layout: &Layout) -> Ftl {
        assert!(layout.slots_per_page.is_power_of_two());
        assert!(layout.slots_per_superblock.is_multiple_of(layout.slots_per_page));
        assert!(layout.physical_slots < u64::from(UNMAPPED));
        let gc_destinations = match config.interface {
            Interface::Fdp { isolation: FdpIsolation::PersistentlyIsolated, ruh_count } => {
                ruh_count
            }
            _ => 1,
        };
        assert!(
            layout.host_open_superblocks >= 1
                && layout.host_open_superblocks < u32::from(OWNER_SHARED)
        );
        let superblocks = layout.superblock_count as usize;
        Ftl {
            slots_per_superblock: layout.slots_per_superblock,
            superblock_shift: if layout.slots_per_superblock.is_power_of_two() {
                layout.slots_per_superblock.trailing_zeros()
            } else {
                u32::MAX
            },
            page_mask: layout.slots_per_page - 1,
            flash_page_bytes: u64::from(layout.flash_page_bytes),
            blocks_per_superblock: layout.blocks_per_superblock,
            l2p: vec![UNMAPPED; layout.logical_blocks as usize],
            p2l: vec![UNMAPPED; layout.physical_slots as usize],
            valid_bits: ValidBits::new(layout.physical_slots),
            valid: vec![0; superblocks],
            state: vec![SuperblockState::Free; superblocks],
            owner: vec![OWNER_SHARED; superblocks],
            sealed_at: vec![0; superblocks],
            erases: vec![0; superblocks],
            buckets: ValidBuckets::new(layout.slots_per_superblock, layout.superblock_count),
            free: (0..layout.superblock_count).collect(),
            host_open: vec![OpenSuperblock::NONE; layout.host_open_superblocks as usize],
            gc_open: vec![OpenSuperblock::NONE; gc_destinations as usize],
            gc_config: config.gc,
            gc_free_target: layout.gc_free_target,
            rng: SplitMix64::new(config.seed),
            clock: 0,
        }
    }

    pub(crate) fn erase_counts(&self) -> &[u32] {
        &self.erases
    }

    /// Maps `lba` to a fresh slot of `handle`'s open superblock, invalidating its old copy.
    #[inline]
    pub(crate) fn write(
        &mut self,
        lba: u64,
        handle: usize,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        let lba_index = lba as usize;
        // Invalidate first: GC triggered by this write then does not copy data already dead.
        // `l2p[lba]` may keep naming the stale slot until the end: GC moves valid slots only,
        // so it never reads or rewrites this LBA's entry meanwhile.
        let old = self.l2p[lba_index];
        if old != UNMAPPED {
            self.invalidate(old);
        }
        let slot = match self.take_host_slot(handle, counters) {
            Ok(slot) => slot,
            Err(e) => {
                self.l2p[lba_index] = UNMAPPED;
                return Err(e);
            }
        };
        self.l2p[lba_index] = slot;
        self.p2l[slot as usize] = lba as u32;
        self.valid_bits.set(slot);
        Ok(())
    }

    /// Hints that `lba` is about to be written: starts loading its `l2p` entry's cache line.
    #[inline]
    /// The physical slot holding `lba`, for the timing model (which chip serves a read).
    pub(crate) fn slot_of(&self, lba: u64) -> Option<u32> {
        let slot = self.l2p[lba as usize];
        (slot != UNMAPPED).then_some(slot)
    }

    pub(crate) fn prefetch(&self, lba: u64) {
        if let Some(entry) = self.l2p.get(lba as usize) {
            prefetch::for_write(entry);
        }
    }

    /// Deallocates `blocks` LBAs: their slots become stale, reads return zeros.
    pub(crate) fn trim(&mut self, lba: u64, blocks: u64) {
        for index in lba as usize..(lba + blocks) as usize {
            let old = self.l2p[index];
            if old != UNMAPPED {
                self.invalidate(old);
                self.l2p[index] = UNMAPPED;
            }
        }
    }

    #[inline]
    fn superblock_of(&self, slot: u32) -> usize {
        if self.superblock_shift != u32::MAX {
            (slot >> self.superblock_shift) as usize
        } else {
            (slot / self.slots_per_superblock) as usize
        }
    }

    #[inline]
    fn invalidate(&mut self, slot: u32) {
        let superblock = self.superblock_of(slot);
        debug_assert!(self.valid[superblock] > 0);
        self.valid_bits.clear(slot);
        self.valid[superblock] -= 1;
        self.buckets.decremented(superblock as u32, self.valid[superblock]);
    }

    #[inline]
    fn take_host_slot(&mut self, handle: usize, counters: &mut Counters) -> Result<u32, EmuError> {
        if self.host_open[handle].next_offset >= self.slots_per_superblock {
            self.replace_host_superblock(handle, counters)?;
        }
        let open = &mut self.host_open[handle];
        let slot = open.superblock * self.slots_per_superblock + open.next_offset;
        open.next_offset += 1;
        self.valid[open.superblock as usize] += 1;
        // Count the program when the flash page is complete: a partly filled page waits in the
        // device's (power-loss protected) write buffer, as on a real SSD.
        if open.next_offset & self.page_mask == 0 {
            counters.flash_host_bytes += self.flash_page_bytes;
        }
        self.clock += 1;
        Ok(slot)
    }

    /// Seals `handle`'s full superblock and opens a new one, running GC first if taking it
    /// would leave fewer than `free_superblocks_low` free.
    #[cold]
    fn replace_host_superblock(
        &mut self,
        handle: usize,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        let current = self.host_open[handle];
        if current.superblock != NO_SUPERBLOCK {
            assert_eq!(current.next_offset, self.slots_per_superblock);
            self.seal(current.superblock);
        }
        self.host_open[handle] = OpenSuperblock::NONE;
        if self.free.len() <= self.gc_config.free_superblocks_low as usize {
            self.collect(counters)?;
        }
        let superblock = self.take_free(handle as u16)?;
        self.host_open[handle] = OpenSuperblock { superblock, next_offset: 0 };
        Ok(())
    }

    /// FDP's reclaim unit handle update (TP4146, I/O Management Send): `handle`'s current
    /// reclaim unit stops taking writes and its next write starts a fresh one. A unit holding
    /// data is sealed where it stands: the flash page in the write buffer is programmed with
    /// padding, the unwritten rest stays erased until the unit is reclaimed (its slots count
    /// as free space to GC, which erases the whole unit). An empty open unit stays.
    pub(crate) fn update_handle(&mut self, handle: usize, counters: &mut Counters) {
        let open = self.host_open[handle];
        if open.superblock == NO_SUPERBLOCK || open.next_offset == 0 {
            return;
        }
        assert!(open.next_offset <= self.slots_per_superblock);
        if open.next_offset < self.slots_per_superblock {
            // The buffered page's host slots are programmed now (counted here, as a full page
            // counts them in `take_host_slot`), the rest of it as padding.
            let into_page = open.next_offset & self.page_mask;
            if into_page != 0 {
                let pad_slots = u64::from(self.page_mask + 1 - into_page);
                counters.flash_host_bytes += u64::from(into_page) * crate::LBA_BYTES;
                counters.flash_pad_bytes += pad_slots * crate::LBA_BYTES;
            }
        }
        self.seal(open.superblock);
        self.host_open[handle] = OpenSuperblock::NONE;
    }

    fn take_free(&mut self, owner: u16) -> Result<u32, EmuError> {
        let superblock = self.free.pop_front().ok_or(EmuError::NoSpace)?;
        let index = superblock as usize;
        assert_eq!(self.state[index], SuperblockState::Free);
        assert_eq!(self.valid[index], 0);
        self.state[index] = SuperblockState::Open;
        self.owner[index] = owner;
        Ok(superblock)
    }

    fn seal(&mut self, superblock: u32) {
        let index = superblock as usize;
        assert_eq!(self.state[index], SuperblockState::Open);
        self.state[index] = SuperblockState::Sealed;
        self.sealed_at[index] = self.clock;
        self.buckets.insert(superblock, self.valid[index]);
    }

    /// Checks every invariant of the maps; for tests (O(device size)).
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut valid = vec![0u32; self.valid.len()];
        for (lba, &slot) in self.l2p.iter().enumerate() {
            if slot == UNMAPPED {
                continue;
            }
            if !self.valid_bits.get(slot) || self.p2l[slot as usize] != lba as u32 {
                return Err(format!(
                    "l2p[{lba}] = {slot} but p2l[{slot}] = {} (valid bit {})",
                    self.p2l[slot as usize],
                    self.valid_bits.get(slot)
                ));
            }
            valid[(slot / self.slots_per_superblock) as usize] += 1;
        }
        // With the check above (every mapped slot's bit is set), this makes the set bits a
        // bijection onto the mapped LBAs, so the per-superblock counts below cover the bits too.
        for (slot, &lba) in self.p2l.iter().enumerate() {
            if self.valid_bits.get(slot as u32) && self.l2p[lba as usize] != slot as u32 {
                return Err(format!(
                    "valid p2l[{slot}] = {lba} but l2p[{lba}] = {}",
                    self.l2p[lba as usize]
                ));
            }
        }
        for (superblock, (&counted, &kept)) in valid.iter().zip(&self.valid).enumerate() {
            if counted != kept {
                return Err(format!(
                    "superblock {superblock}: {kept} valid recorded, {counted} mapped"
                ));
            }
            if self.state[superblock] == SuperblockState::Free && kept != 0 {
                return Err(format!("free superblock {superblock} holds {kept} valid slots"));
            }
        }
        for (superblock, &state) in self.state.iter().enumerate() {
            let bucketed = self.buckets.holds(superblock as u32, self.valid[superblock]);
            if bucketed != (state == SuperblockState::Sealed) {
                return Err(format!(
                    "superblock {superblock} ({state:?}, {} valid): in its bucket = {bucketed}",
                    self.valid[superblock]
                ));
            }
        }
        let sealed = self.state.iter().filter(|&&s| s == SuperblockState::Sealed).count();
        if self.buckets.check()? as usize != sealed {
            return Err(format!("{sealed} sealed superblocks but the buckets hold another count"));
        }
        let free_states = self.state.iter().filter(|&&s| s == SuperblockState::Free).count();
        if free_states != self.free.len() {
            return Err(format!(
                "{free_states} superblocks free but the pool holds {}",
                self.free.len()
            ));
        }
        Ok(())
    }
}
