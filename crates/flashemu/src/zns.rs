//! ZNS: zones mapped one-to-one onto superblocks, the host writes at each zone's write pointer
//! and resets zones itself, so the device never copies: flash writes equal host writes.
//!
//! Every command is checked completely before anything changes, so a refused command leaves
//! the device exactly as it was. Open/active limits are strict: a write that would implicitly
//! open a zone beyond `max_open_zones` fails with `TooManyOpenZones` rather than closing another
//! zone behind the host's back (the host, not the device, decides what is open).
use crate::config::{Config, Interface};
use crate::layout::Layout;
use crate::{Counters, EmuError, ZoneInfo, ZoneState, LBA_BYTES};

#[derive(Debug)]
pub(crate) struct Zns {
    zone_blocks: u64,
    capacity_blocks: u64,
    slots_per_page: u64,
    flash_page_bytes: u64,
    blocks_per_superblock: u32,
    state: Vec<ZoneState>,
    /// Write pointer relative to the zone start, in blocks.
    write_offset: Vec<u64>,
    open_zones: u32,
    active_zones: u32,
    max_open_zones: u32,
    max_active_zones: u32,
    erases: Vec<u32>,
}

fn state_name(state: ZoneState) -> &'static str {
    match state {
        ZoneState::Empty => "empty",
        ZoneState::ImplicitlyOpen => "implicitly-open",
        ZoneState::ExplicitlyOpen => "explicitly-open",
        ZoneState::Closed => "closed",
        ZoneState::Full => "full",
    }
}

impl Zns {
    pub(crate) fn new(config: &Config, layout: &Layout) -> Zns {
        let Interface::Zns { zone_capacity_blocks, max_open_zones, max_active_zones } =
            config.interface
        else {
            unreachable!("Zns::new on a non-ZNS config");
        };
        let zone_blocks = u64::from(layout.slots_per_superblock);
        let capacity_blocks =
            if zone_capacity_blocks == 0 { zone_blocks } else { zone_capacity_blocks };
        assert!(capacity_blocks >= 1 && capacity_blocks <= zone_blocks);
        let zones = layout.superblock_count as usize;
        Zns {
            zone_blocks,
            capacity_blocks,
            slots_per_page: u64::from(layout.slots_per_page),
            flash_page_bytes: u64::from(layout.flash_page_bytes),
            blocks_per_superblock: layout.blocks_per_superblock,
            state: vec![ZoneState::Empty; zones],
            write_offset: vec![0; zones],
            open_zones: 0,
            active_zones: 0,
            max_open_zones,
            max_active_zones,
            erases: vec![0; zones],
        }
    }

    pub(crate) fn zone_count(&self) -> u32 {
        self.state.len() as u32
    }

    pub(crate) fn erase_counts(&self) -> &[u32] {
        &self.erases
    }

    pub(crate) fn zone_start(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_blocks
    }

    pub(crate) fn check_zone(&self, zone: u32) -> Result<usize, EmuError> {
        if zone < self.zone_count() {
            Ok(zone as usize)
        } else {
            Err(EmuError::NoSuchZone { zone, zone_count: self.zone_count() })
        }
    }

    /// Checks a write of `blocks` at `lba` (already known to be inside the device) without
    /// changing anything; returns the zone.
    pub(crate) fn check_write(&self, lba: u64, blocks: u64) -> Result<u32, EmuError> {
        assert!(blocks >= 1);
        let zone = (lba / self.zone_blocks) as u32;
        let index = zone as usize;
        let offset = lba - self.zone_start(zone);
        let state = self.state[index];
        if state == ZoneState::Full {
            return Err(EmuError::ZoneFull { zone });
        }
        if offset != self.write_offset[index] {
            return Err(EmuError::NotAtWritePointer {
                zone,
                lba,
                write_pointer: self.zone_start(zone) + self.write_offset[index],
            });
        }
        if offset + blocks > self.capacity_blocks {
            return Err(EmuError::ZoneBoundary { zone });
        }
        match state {
            ZoneState::Empty => self.check_can_open(true)?,
            ZoneState::Closed => self.check_can_open(false)?,
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen | ZoneState::Full => {}
        }
        Ok(zone)
    }

    fn check_can_open(&self, activates: bool) -> Result<(), EmuError> {
        if activates && self.active_zones >= self.max_active_zones {
            return Err(EmuError::TooManyActiveZones { limit: self.max_active_zones });
        }
        if self.open_zones >= self.max_open_zones {
            return Err(EmuError::TooManyOpenZones { limit: self.max_open_zones });
        }
        Ok(())
    }

    /// Advances the write pointer after `check_write` accepted the write.
    pub(crate) fn apply_write(&mut self, zone: u32, blocks: u64, counters: &mut Counters) {
        let index = zone as usize;
        match self.state[index] {
            ZoneState::Empty => {
                self.active_zones += 1;
                self.open_zones += 1;
                self.state[index] = ZoneState::ImplicitlyOpen;
            }
            ZoneState::Closed => {
                self.open_zones += 1;
                self.state[index] = ZoneState::ImplicitlyOpen;
            }
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {}
            ZoneState::Full => unreachable!("check_write refuses full zones"),
        }
        let before = self.write_offset[index];
        let after = before + blocks;
        assert!(after <= self.capacity_blocks);
        self.write_offset[index] = after;
        // Whole flash pages are programmed as they fill; a partial one waits in the buffer.
        let pages = after / self.slots_per_page - before / self.slots_per_page;
        counters.flash_host_bytes += pages * self.flash_page_bytes;
        if after == self.capacity_blocks {
            self.make_full(index, counters);
        }
    }

    /// Moves an open or closed zone to Full, programming its buffered partial page with padding.
    fn make_full(&mut self, index: usize, counters: &mut Counters) {
        match self.state[index] {
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {
                self.open_zones -= 1;
                self.active_zones -= 1;
            }
            ZoneState::Closed => self.active_zones -= 1,
            ZoneState::Empty | ZoneState::Full => {}
        }
        let partial = self.write_offset[index] % self.slots_per_page;
        if partial != 0 {
            counters.flash_host_bytes += partial * LBA_BYTES;
            counters.flash_pad_bytes += (self.slots_per_page - partial) * LBA_BYTES;
        }
        self.write_offset[index] = self.capacity_blocks;
        self.state[index] = ZoneState::Full;
    }

    /// The LBA a zone append of `blocks` would get; changes nothing.
    pub(crate) fn append_lba(&self, zone: u32, blocks: u64) -> Result<u64, EmuError> {
        let index = self.check_zone(zone)?;
        if self.state[index] == ZoneState::Full {
            return Err(EmuError::ZoneFull { zone });
        }
        let lba = self.zone_start(zone) + self.write_offset[index];
        self.check_write(lba, blocks)?;
        Ok(lba)
    }

    pub(crate) fn open(&mut self, zone: u32) -> Result<(), EmuError> {
        let index = self.check_zone(zone)?;
        match self.state[index] {
            ZoneState::Empty => {
                self.check_can_open(true)?;
                self.active_zones += 1;
                self.open_zones += 1;
            }
            ZoneState::Closed => {
                self.check_can_open(false)?;
                self.open_zones += 1;
            }
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {}
            state @ ZoneState::Full => {
                return Err(EmuError::InvalidZoneState {
                    zone,
                    state: state_name(state),
                    op: "open",
                })
            }
        }
        self.state[index] = ZoneState::ExplicitlyOpen;
        Ok(())
    }

    pub(crate) fn close(&mut self, zone: u32) -> Result<(), EmuError> {
        let index = self.check_zone(zone)?;
        match self.state[index] {
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {
                self.open_zones -= 1;
                // A zone closed before its first write holds nothing: it goes back to Empty
                // and stops counting as active (NVMe ZNS zone state machine).
                if self.write_offset[index] == 0 {
                    self.active_zones -= 1;
                    self.state[index] = ZoneState::Empty;
                } else {
                    self.state[index] = ZoneState::Closed;
                }
                Ok(())
            }
            ZoneState::Closed => Ok(()),
            state @ (ZoneState::Empty | ZoneState::Full) => {
                Err(EmuError::InvalidZoneState { zone, state: state_name(state), op: "close" })
            }
        }
    }

    pub(crate) fn finish(&mut self, zone: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let index = self.check_zone(zone)?;
        if self.state[index] != ZoneState::Full {
            self.make_full(index, counters);
        }
        Ok(())
    }

    /// Resets the zone; returns the blocks that were written (the range the store must zero).
    pub(crate) fn reset(&mut self, zone: u32, counters: &mut Counters) -> Result<u64, EmuError> {
        let index = self.check_zone(zone)?;
        let written = self.write_offset[index];
        match self.state[index] {
            ZoneState::Empty => return Ok(0),
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {
                self.open_zones -= 1;
                self.active_zones -= 1;
            }
            ZoneState::Closed => self.active_zones -= 1,
            ZoneState::Full => {}
        }
        // A partial page still in the write buffer is dropped, never programmed.
        self.erases[index] += 1;
        counters.superblock_erases += 1;
        counters.block_erases += u64::from(self.blocks_per_superblock);
        self.write_offset[index] = 0;
        self.state[index] = ZoneState::Empty;
        Ok(written)
    }

    /// Checks that every block of the read is below its zone's write pointer.
    pub(crate) fn check_read(&self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        let mut at = lba;
        let end = lba + blocks;
        // Bound: one iteration per zone the range touches.
        for _ in 0..=self.state.len() {
            if at >= end {
                return Ok(());
            }
            let zone = (at / self.zone_blocks) as u32;
            let start = self.zone_start(zone);
            let zone_end = start + self.zone_blocks;
            let last = end.min(zone_end);
            if last - start > self.write_offset[zone as usize] {
                let first_bad = at.max(start + self.write_offset[zone as usize]);
                return Err(EmuError::ReadBeyondWritePointer { zone, lba: first_bad });
            }
            at = last;
        }
        unreachable!("a read range spans at most zone_count zones");
    }

    pub(crate) fn report_one(&self, zone: u32) -> ZoneInfo {
        ZoneInfo {
            zone_id: zone,
            start_lba: self.zone_start(zone),
            size_blocks: self.zone_blocks,
            capacity_blocks: self.capacity_blocks,
            write_pointer_lba: self.zone_start(zone) + self.write_offset[zone as usize],
            state: self.state[zone as usize],
        }
    }

    pub(crate) fn report(&self) -> Vec<ZoneInfo> {
        (0..self.zone_count()).map(|zone| self.report_one(zone)).collect()
    }
}
