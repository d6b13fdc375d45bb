//! ZNS: zones mapped one-to-one onto superblocks, the host writes at each zone's write pointer
//! and resets zones itself, so the device never copies: flash writes equal host writes.
//!
//! Write pointers are kept in bytes (002 sec. III-D): block writes need a block-aligned
//! pointer, compressed writes (crate::cczns) advance it by the bytes they pack. A zone opened in
//! padding mode (002 sec. III-E) gets each compressed write's last chunk aligned to a block.
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
    flash_page_bytes: u64,
    blocks_per_superblock: u32,
    state: Vec<ZoneState>,
    /// Write pointer relative to the zone start, in bytes.
    write_bytes: Vec<u64>,
    /// Padding bytes (of padding-mode writes) in the zone's buffered, not yet programmed,
    /// flash page: counted as padding, not host data, when that page is programmed.
    buffered_pad_bytes: Vec<u64>,
    /// Zones opened in padding mode (until their reset).
    padding: Vec<bool>,
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
            flash_page_bytes: u64::from(layout.flash_page_bytes),
            blocks_per_superblock: layout.blocks_per_superblock,
            state: vec![ZoneState::Empty; zones],
            write_bytes: vec![0; zones],
            buffered_pad_bytes: vec![0; zones],
            padding: vec![false; zones],
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
        if offset * LBA_BYTES != self.write_bytes[index] {
            return Err(EmuError::NotAtWritePointer {
                zone,
                lba,
                write_pointer: self.zone_start(zone) + self.write_bytes[index] / LBA_BYTES,
            });
        }
        if offset + blocks > self.capacity_blocks {
            return Err(EmuError::ZoneBoundary { zone });
        }
        self.check_opens(zone)?;
        Ok(zone)
    }

    /// Checks that `zone` may take a write now (not full, open limits); changes nothing.
    pub(crate) fn check_opens(&self, zone: u32) -> Result<(), EmuError> {
        match self.state[zone as usize] {
            ZoneState::Empty => self.check_can_open(true)?,
            ZoneState::Closed => self.check_can_open(false)?,
            ZoneState::Full => return Err(EmuError::ZoneFull { zone }),
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {}
        }
        Ok(())
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
        self.apply_bytes(zone, blocks * LBA_BYTES, 0, counters);
    }

    /// Advances the write pointer by `data_bytes` then `pad_bytes` (a checked write). Whole
    /// flash pages are programmed as they fill; a partial one waits in the buffer.
    pub(crate) fn apply_bytes(
        &mut self,
        zone: u32,
        data_bytes: u64,
        pad_bytes: u64,
        counters: &mut Counters,
    ) {
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
            ZoneState::Full => unreachable!("writes to full zones are refused"),
        }
        let page = self.flash_page_bytes;
        let before = self.write_bytes[index];
        let after = before + data_bytes + pad_bytes;
        assert!(after <= self.capacity_bytes());
        self.write_bytes[index] = after;
        let pages = after / page - before / page;
        if pages > 0 {
            // The pad sits at the end of the write; the part before the last page boundary is
            // programmed now, together with any pad buffered in the page that just filled.
            let boundary = (after / page) * page;
            let pad_start = after - pad_bytes;
            let pad_programmed = boundary.saturating_sub(pad_start).min(pad_bytes);
            let programmed_pad = self.buffered_pad_bytes[index] + pad_programmed;
            self.buffered_pad_bytes[index] = pad_bytes - pad_programmed;
            counters.flash_host_bytes += pages * page - programmed_pad;
            counters.flash_pad_bytes += programmed_pad;
        } else {
            self.buffered_pad_bytes[index] += pad_bytes;
        }
        if after == self.capacity_bytes() {
            self.make_full(index, counters);
        }
    }

    pub(crate) fn capacity_bytes(&self) -> u64 {
        self.capacity_blocks * LBA_BYTES
    }

    /// Bytes of one zone's address space (its size, not its capacity).
    pub(crate) fn zone_bytes(&self) -> u64 {
        self.zone_blocks * LBA_BYTES
    }

    /// The write pointer of `zone`, bytes from the zone start.
    pub(crate) fn write_bytes(&self, zone: u32) -> u64 {
        self.write_bytes[zone as usize]
    }

    pub(crate) fn is_padding(&self, zone: u32) -> bool {
        self.padding[zone as usize]
    }

    pub(crate) fn flash_page_bytes(&self) -> u64 {
        self.flash_page_bytes
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
        let partial = self.write_bytes[index] % self.flash_page_bytes;
        let buffered_pad = std::mem::take(&mut self.buffered_pad_bytes[index]);
        if partial != 0 {
            counters.flash_host_bytes += partial - buffered_pad;
            counters.flash_pad_bytes += self.flash_page_bytes - partial + buffered_pad;
        }
        self.write_bytes[index] = self.capacity_bytes();
        self.state[index] = ZoneState::Full;
    }

    /// The LBA a zone append of `blocks` would get; changes nothing.
    pub(crate) fn append_lba(&self, zone: u32, blocks: u64) -> Result<u64, EmuError> {
        let index = self.check_zone(zone)?;
        if self.state[index] == ZoneState::Full {
            return Err(EmuError::ZoneFull { zone });
        }
        let lba = self.zone_start(zone) + self.write_bytes[index] / LBA_BYTES;
        self.check_write(lba, blocks)?;
        Ok(lba)
    }

    /// Explicit open; `padding` asks for a padding zone (002 sec. III-E), allowed only while
    /// the zone is empty (the mode holds until the zone's reset).
    pub(crate) fn open(&mut self, zone: u32, padding: bool) -> Result<(), EmuError> {
        let index = self.check_zone(zone)?;
        if padding && self.write_bytes[index] != 0 {
            return Err(EmuError::InvalidZoneState {
                zone,
                state: state_name(self.state[index]),
                op: "open in padding mode (zone already written)",
            });
        }
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
        self.padding[index] |= padding;
        Ok(())
    }

    pub(crate) fn close(&mut self, zone: u32) -> Result<(), EmuError> {
        let index = self.check_zone(zone)?;
        match self.state[index] {
            ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen => {
                self.open_zones -= 1;
                // A zone closed before its first write holds nothing: it goes back to Empty
                // and stops counting as active (NVMe ZNS zone state machine).
                if self.write_bytes[index] == 0 {
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
        let written = self.write_bytes[index].div_ceil(LBA_BYTES);
        match self.state[index] {
            ZoneState::Empty => {
                self.padding[index] = false;
                return Ok(0);
            }
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
        self.write_bytes[index] = 0;
        self.buffered_pad_bytes[index] = 0;
        self.padding[index] = false;
        self.state[index] = ZoneState::Empty;
        Ok(written)
    }

    /// Checks that every block of the read is below its zone's write pointer (a block the
    /// byte pointer is inside of counts as written: its tail reads as zeros).
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
            let written_blocks = self.write_bytes[zone as usize].div_ceil(LBA_BYTES);
            if last - start > written_blocks {
                let first_bad = at.max(start + written_blocks);
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
            write_pointer_lba: self.zone_start(zone) + self.write_bytes[zone as usize] / LBA_BYTES,
            write_pointer_bytes: self.zone_start(zone) * LBA_BYTES
                + self.write_bytes[zone as usize],
            padding: self.padding[zone as usize],
            state: self.state[zone as usize],
        }
    }

    pub(crate) fn report(&self) -> Vec<ZoneInfo> {
        (0..self.zone_count()).map(|zone| self.report_one(zone)).collect()
    }
}
