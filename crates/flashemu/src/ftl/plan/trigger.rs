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
//! A victim with nothing stale is never taken (FEMU keeps such superblocks off its victim
//! list; its partial GC would take such a block, which only moves data, and is not followed
//! there).
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
            if self.block_valid[block as usize] == self.slots_per_block {
                return Ok(false);
            }
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
        if stale == 0.0 || (!force && stale < self.plan.gc_background_min_invalid * slots) {
            return Ok(false);
        }
        counters.gc_invocations += 1;
        self.take_group(group);
        self.relocate_group(group, counters)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::ftl::plan::PlanFtl;
    use crate::Counters;

    /// 2 channels x 8 chips x 64 blocks x 2 pages of 16 KiB (8 slots a block): a big
    /// superblock is 16 blocks, 128 slots; the background floor is 16 free blocks a chip
    /// (25% of 64), the foreground one 3 (5%).
    fn ftl(scheme: &str, sets: &[(&str, &str)]) -> PlanFtl {
        let mut config = Config::preset("plan").unwrap_or_else(|e| panic!("{e}"));
        // OP 25%: the conventional layout's reserve check needs it at 64 blocks per chip.
        let geometry = [
            ("channels", "2"),
            ("blocks-per-chip", "64"),
            ("pages-per-block", "2"),
            ("op", "0.25"),
        ];
        for (key, value) in geometry {
            config.set(key, value).unwrap_or_else(|e| panic!("{e}"));
        }
        config.set("plan.scheme", scheme).unwrap_or_else(|e| panic!("{e}"));
        // 4 KiB map entries and only the written superblocks open: the counts below are
        // slots and free blocks with one host and one GC superblock.
        let as_used = [("plan.map-unit", "slot"), ("plan.device-streams", "0")];
        for (key, value) in as_used.iter().chain(sets) {
            config.set(key, value).unwrap_or_else(|e| panic!("{e}"));
        }
        config.validate().unwrap_or_else(|e| panic!("{e}"));
        let plan = config.plan.unwrap_or_default();
        PlanFtl::new(&config, &plan, &config.layout()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes `groups` big superblocks' worth of LBAs from 0 in big requests, sealing them.
    fn fill_big(f: &mut PlanFtl, groups: u64, counters: &mut Counters) {
        for lba in (0..groups * 128).step_by(64) {
            f.write(lba, 64, 0, 0, counters).unwrap_or_else(|e| panic!("{e}"));
        }
        // One more to seal the last.
        f.write(groups * 128, 64, 0, 0, counters).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn background_gc_waits_for_an_eighth_stale() {
        let mut f = ftl("plain", &[]);
        let mut counters = Counters::new(1);
        // 50 big superblocks + the open one take 51 of each chip's 64 blocks: 13 free, under
        // the background floor of 16, above the foreground one.
        fill_big(&mut f, 50, &mut counters);
        assert!(f.free_by_chip.iter().all(|pool| pool.len() == 13));
        f.after_command(&mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.gc_invocations, 0, "nothing stale: no victim");
        // 15 of a superblock's 128 slots stale: below 1/8 (16), still nothing.
        f.trim(128, 15, 0);
        f.after_command(&mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.gc_invocations, 0);
        // The 16th reaches the floor: that superblock goes, its 112 valid slots copied.
        f.trim(143, 1, 0);
        f.after_command(&mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.gc_invocations, 1);
        assert_eq!(counters.gc_copied_blocks, 112);
        f.check().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn foreground_gc_ignores_the_stale_floor_until_chips_recover() {
        // Foreground floor at 25% too: a write into a device under it collects first.
        let sets = [("plan.gc-foreground-free", "0.25")];
        let mut f = ftl("plain", &sets);
        let mut counters = Counters::new(1);
        fill_big(&mut f, 50, &mut counters);
        f.trim(0, 1, 0);
        f.trim(300, 2, 0);
        // Before the write: superblock 0 (1 stale) is not the best; superblock 2 (2 stale) is.
        f.write(6_500, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.gc_invocations, 2, "both stale superblocks, best first");
        assert_eq!(counters.gc_copied_blocks, 126 + 127);
        // The rest have nothing stale: the chips stay under the floor rather than move data.
        assert!(f.free_by_chip.iter().all(|pool| pool.len() < 16));
        f.check().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_chip_chooses_among_the_superblocks_holding_one_of_its_blocks() {
        let mut f = ftl("plan-nopred", &[("plan.small-chips-per-channel", "1")]);
        let mut counters = Counters::new(1);
        // Small superblocks (1 chip a channel, 2 blocks, 16 slots) rotate over chips 0..8:
        // eight of them, then one more LBA to seal the eighth.
        for lba in 0..129 {
            f.write(lba, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        }
        // The one on chip 0 holds LBAs 0..16, on chip 3 48..64.
        f.trim(0, 10, 0);
        f.trim(48, 4, 0);
        let chip_of = |f: &PlanFtl, g: u32| f.group_first_chip[g as usize];
        let on3 = f.group_victim(Some(3)).unwrap_or_else(|| panic!("no victim on chip 3"));
        assert_eq!((chip_of(&f, on3), f.group_valid[on3 as usize]), (3, 12));
        let any = f.group_victim(None).unwrap_or_else(|| panic!("no victim"));
        assert_eq!((chip_of(&f, any), f.group_valid[any as usize]), (0, 6));
    }
}
