//! The GC trigger of 004's FEMU (`PlanGcTrigger::PerChip`), which produced 004's figures.
//!
//! FEMU counts free blocks per chip. After every host command it checks whether some chip has
//! fewer than `gc_background_free` of its blocks free; scanning the chips round robin from
//! where the last scan stopped, the first such chip names the victim: the sealed superblock
//! with the lowest valid ratio among those holding a block of that chip. Background GC
//! collects that one victim only if at least `gc_background_min_invalid` of its slots are
//! stale, else nothing this time. Before a write, while some chip has fewer than
//! `gc_foreground_free`, victims are collected the same way without that floor. Partial GC
//! takes the block of that chip with the fewest valid slots, without a floor.
//!
//! With OP at 6.25%, a chip below 25% free is the steady state of a full device: background
//! GC then runs after nearly every command and collects a superblock as soon as its stale
//! share reaches the floor, long before an on-demand collector would.
use super::PlanFtl;
use crate::config::PlanGcTrigger;
use crate::{Counters, EmuError};

impl PlanFtl {
    /// Foreground GC before a host write (per-chip trigger only).
    pub(super) fn before_write(&mut self, counters: &mut Counters) -> Result<(), EmuError> {
        if self.plan.gc_trigger != PlanGcTrigger::PerChip {
            return Ok(());
        }
        // Bound: each round erases at least one block or stops; a device's worth of blocks
        // is more than any floor needs.
        for _ in 0..self.block_valid.len() {
            if !self.chip_below(self.foreground_free_blocks) {
                return Ok(());
            }
            if !self.chip_step(true, counters)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Background GC after a host command of any kind (per-chip trigger only): at most one
    /// victim.
    pub(crate) fn after_command(&mut self, counters: &mut Counters) -> Result<(), EmuError> {
        if self.plan.gc_trigger == PlanGcTrigger::PerChip
            && self.chip_below(self.background_free_blocks)
        {
            self.chip_step(false, counters)?;
        }
        Ok(())
    }

    fn chip_below(&self, free_blocks: usize) -> bool {
        self.free_by_chip.iter().any(|pool| pool.len() < free_blocks)
    }

    /// One FEMU `do_gc`: the first chip (round robin) under the threshold gives the victim.
    /// Whether a victim was collected.
    fn chip_step(&mut self, force: bool, counters: &mut Counters) -> Result<bool, EmuError> {
        let threshold =
            if force { self.foreground_free_blocks } else { self.background_free_blocks };
        let chips = self.free_by_chip.len();
        let Some(chip) = (0..chips)
            .map(|step| (self.next_gc_chip + step) % chips)
            .find(|&chip| self.free_by_chip[chip].len() < threshold)
        else {
            return Ok(false);
        };
        self.next_gc_chip = (chip + 1) % chips;
        if self.block_buckets.is_some() {
            let Some(block) = self.block_victim(Some(chip as u32)) else {
                return Ok(false);
            };
            counters.gc_invocations += 1;
            self.take_block(block);
            self.collect_block(block, counters)?;
            return Ok(true);
        }
        let chip_in_channel = chip as u32 % self.chips_per_channel;
        let Some(group) = self.group_victim(Some(chip_in_channel)) else {
            return Ok(false);
        };
        let slots = f64::from(self.group_slots(group));
        let stale = slots - f64::from(self.group_valid[group as usize]);
        if !force && stale < self.plan.gc_background_min_invalid * slots {
            return Ok(false);
        }
        counters.gc_invocations += 1;
        self.take_group(group);
        self.relocate_group(group, counters)?;
        Ok(true)
    }
}
