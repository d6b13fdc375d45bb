//! Opening superblocks from free blocks, sealing them, and GC: victims by lowest valid ratio
//! (superblocks of both widths compete), or single blocks under partial GC.
//!
//! Two triggers (`PlanGcTrigger`): the per-chip one of 004's FEMU is in trigger.rs; the
//! on-demand one is here. On-demand, in blocks: when opening a host superblock would leave fewer than
//! `free_superblocks_low + 1` full-width superblocks' worth of free blocks, GC reclaims until
//! `gc_free_target + 1` full-width superblocks' worth are free. The extra superblock is what
//! differs from the conventional FTL: there a victim is as big as GC's destination, so one new
//! destination per victim suffices; here a victim may be small while the destination is
//! full width, and a victim's blocks return only after its copy, so the pool may sag by one
//! full width (its copies) before the erases catch up. A copy of one full width of slots
//! always erases at least one full width of blocks (no block holds more valid slots than it
//! has), so two widths of free blocks at GC start cover every destination GC opens. The OP
//! check in `Config::validate` leaves stale slots outside the reserve and the open
//! superblocks, so every round can free space.
use super::{PlanFtl, NONE};
use crate::config::PlanGcTrigger;
use crate::ftl::SuperblockState;
use crate::{Counters, EmuError};

impl PlanFtl {
    /// Seals `point`'s full group (if any) and opens a fresh one at the point's width; host
    /// points (`may_collect`) run GC first when the free pool is low.
    pub(super) fn replace_open(
        &mut self,
        point: usize,
        counters: &mut Counters,
        may_collect: bool,
    ) -> Result<(), EmuError> {
        let current = self.open[point].group;
        if current != NONE {
            assert_eq!(self.open[point].next_offset, self.group_slots(current));
            self.seal(current);
            self.open[point].group = NONE;
        }
        let width = u64::from(self.channels * self.open[point].chips_per_channel);
        if may_collect {
            match self.plan.gc_trigger {
                PlanGcTrigger::OnDemand if self.free_blocks < self.gc_low_blocks + width => {
                    self.collect(self.gc_target_blocks, counters)?;
                }
                // The per-chip trigger keeps its floor before writes; this only catches a
                // pool that cannot form the superblock and GC's next destination.
                PlanGcTrigger::PerChip
                    if self.free_blocks < width + u64::from(self.big_width_blocks()) =>
                {
                    let target = width + 2 * u64::from(self.big_width_blocks());
                    self.collect(target, counters)?;
                }
                _ => {}
            }
        }
        let group = self.open_group(self.open[point].chips_per_channel)?;
        self.open[point].group = group;
        self.open[point].next_offset = 0;
        Ok(())
    }

    /// Forms a group of `chips_per_channel` chips in every channel from free blocks: big takes
    /// every chip; small the next chip group in turn. A chip without a free block (partial GC
    /// frees blocks unevenly) is replaced by the chip of the same channel with the most.
    pub(super) fn open_group(&mut self, chips_per_channel: u32) -> Result<u32, EmuError> {
        let width = self.channels * chips_per_channel;
        if self.free_blocks < u64::from(width) {
            return Err(EmuError::NoSpace);
        }
        let group = self.free_groups.pop().ok_or(EmuError::NoSpace)?;
        let groups_per_channel = self.chips_per_channel / chips_per_channel;
        let first_chip = (self.next_chip_group % groups_per_channel) * chips_per_channel;
        self.next_chip_group = self.next_chip_group.wrapping_add(1);
        let base = group as usize * self.big_width_blocks() as usize;
        // Block i of the group: channel i % channels, chip first_chip + i / channels.
        for i in 0..width {
            let channel = i % self.channels;
            let wanted = channel * self.chips_per_channel + first_chip + i / self.channels;
            let block = self.take_free_block(wanted, channel)?;
            self.group_blocks[base + i as usize] = block;
            self.block_group[block as usize] = group;
        }
        let index = group as usize;
        assert_eq!(self.group_state[index], SuperblockState::Free);
        assert_eq!(self.group_valid[index], 0);
        self.group_width[index] = width;
        self.group_first_chip[index] = first_chip;
        self.group_live_blocks[index] = width;
        self.group_state[index] = SuperblockState::Open;
        Ok(group)
    }

    fn take_free_block(&mut self, chip: u32, channel: u32) -> Result<u32, EmuError> {
        let first = channel * self.chips_per_channel;
        let in_channel = (first..first + self.chips_per_channel)
            .max_by_key(|&c| (self.free_by_chip[c as usize].len(), u32::MAX - c));
        let fallback = (0..self.free_by_chip.len() as u32)
            .max_by_key(|&c| self.free_by_chip[c as usize].len());
        let source = [Some(chip), in_channel, fallback]
            .into_iter()
            .flatten()
            .find(|&c| !self.free_by_chip[c as usize].is_empty())
            .ok_or(EmuError::NoSpace)?;
        let block = self.free_by_chip[source as usize].pop_front().ok_or(EmuError::NoSpace)?;
        assert_eq!(self.block_valid[block as usize], 0);
        self.free_blocks -= 1;
        Ok(block)
    }

    fn seal(&mut self, group: u32) {
        let index = group as usize;
        assert_eq!(self.group_state[index], SuperblockState::Open);
        self.group_state[index] = SuperblockState::Sealed;
        self.group_sealed_at[index] = self.clock;
        if let Some(per_chip) = &mut self.block_buckets {
            let base = index * (self.channels * self.big_chips) as usize;
            for &block in &self.group_blocks[base..base + self.group_width[index] as usize] {
                self.block_sealed_at[block as usize] = self.clock;
                let (chip, local) = (block / self.blocks_per_chip, block % self.blocks_per_chip);
                per_chip[chip as usize].insert(local, self.block_valid[block as usize]);
            }
        } else {
            let valid = self.group_valid[index];
            self.group_buckets(group).insert(group, valid);
        }
    }

    /// Reclaims victims (lowest valid ratio over the whole device) until `target_blocks` are
    /// free.
    pub(super) fn collect(
        &mut self,
        target_blocks: u64,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        // Bound: every victim with a stale slot frees at least one slot net; the OP check
        // leaves enough stale slots that this many victims always reach the target.
        let rounds_max = self.block_valid.len() * 2;
        counters.gc_invocations += 1;
        for _ in 0..rounds_max {
            if self.free_blocks >= target_blocks {
                return Ok(());
            }
            if self.block_buckets.is_some() {
                let block = self.block_victim(None).ok_or(EmuError::NoSpace)?;
                self.take_block(block);
                self.collect_block(block, counters)?;
            } else {
                let group = self.group_victim(None).ok_or(EmuError::NoSpace)?;
                self.take_group(group);
                self.relocate_group(group, counters)?;
            }
        }
        Err(EmuError::NoSpace)
    }

    /// The sealed group with the lowest valid ratio (fewest valid within a width) among
    /// those holding a block of chip `chip_in_channel` of every channel, or of all groups
    /// (None). Left in its bucket: `take_group` removes it.
    pub(super) fn group_victim(&mut self, chip_in_channel: Option<u32>) -> Option<u32> {
        let (big_sets, small_sets) = match chip_in_channel {
            Some(k) => {
                let (b, s) = (k / self.big_chips, k / self.plan.small_chips_per_channel);
                (b..b + 1, s..s + 1)
            }
            None => (0..self.big_buckets.len() as u32, 0..self.small_buckets.len() as u32),
        };
        let mut best: Option<u32> = None;
        let sets = big_sets.map(|i| (true, i)).chain(small_sets.map(|i| (false, i)));
        for (big, index) in sets {
            let set = if big {
                &mut self.big_buckets[index as usize]
            } else {
                &mut self.small_buckets[index as usize]
            };
            set.settle();
            let Some(candidate) = set.min(&self.group_valid, &self.group_sealed_at) else {
                continue;
            };
            best = match best {
                // valid_c / slots_c < valid_b / slots_b, cross-multiplied.
                Some(b)
                    if u64::from(self.group_valid[b as usize])
                        * u64::from(self.group_slots(candidate))
                        <= u64::from(self.group_valid[candidate as usize])
                            * u64::from(self.group_slots(b)) =>
                {
                    Some(b)
                }
                _ => Some(candidate),
            };
        }
        best
    }

    pub(super) fn take_group(&mut self, group: u32) {
        self.group_buckets(group).remove(group);
    }

    /// The sealed block with the fewest valid slots on `chip`, or on any chip (None).
    pub(super) fn block_victim(&mut self, chip: Option<u32>) -> Option<u32> {
        let bpc = self.blocks_per_chip as usize;
        let per_chip = self.block_buckets.as_mut()?;
        let chips = match chip {
            Some(c) => c..c + 1,
            None => 0..per_chip.len() as u32,
        };
        let mut best: Option<u32> = None;
        for c in chips {
            let range = c as usize * bpc..(c as usize + 1) * bpc;
            let set = &mut per_chip[c as usize];
            set.settle();
            let Some(local) =
                set.min(&self.block_valid[range.clone()], &self.block_sealed_at[range])
            else {
                continue;
            };
            let block = c * self.blocks_per_chip + local;
            if best.is_none_or(|b| self.block_valid[block as usize] < self.block_valid[b as usize])
            {
                best = Some(block);
            }
        }
        best
    }

    pub(super) fn take_block(&mut self, block: u32) {
        let (chip, local) = (block / self.blocks_per_chip, block % self.blocks_per_chip);
        if let Some(per_chip) = &mut self.block_buckets {
            per_chip[chip as usize].remove(local);
        }
    }

    /// Partial GC's victim: its valid slots out, then the erase.
    pub(super) fn collect_block(
        &mut self,
        block: u32,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        self.relocate_block(block, counters)?;
        self.erase_block(block, counters);
        Ok(())
    }

    pub(super) fn relocate_group(
        &mut self,
        group: u32,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        let index = group as usize;
        assert_eq!(self.group_state[index], SuperblockState::Sealed);
        counters.record_victim(self.group_valid[index], self.group_slots(group));
        let base = index * self.big_width_blocks() as usize;
        let width = self.group_width[index] as usize;
        for i in 0..width {
            let block = self.group_blocks[base + i];
            self.copy_out(block, counters)?;
        }
        assert_eq!(self.group_valid[index], 0, "group {group} still holds valid slots");
        for i in 0..width {
            let block = self.group_blocks[base + i];
            self.erase_block(block, counters);
        }
        counters.superblock_erases += 1;
        Ok(())
    }

    fn relocate_block(&mut self, block: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let group = self.block_group[block as usize];
        assert!(group != NONE && self.group_state[group as usize] == SuperblockState::Sealed);
        counters.record_victim(self.block_valid[block as usize], self.slots_per_block);
        self.copy_out(block, counters)
    }

    /// Copies `block`'s valid slots into GC's open superblock (full width).
    fn copy_out(&mut self, block: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let gc_point = self.open.len() - 1;
        let start = u64::from(block) * u64::from(self.slots_per_block);
        let end = start + u64::from(self.slots_per_block);
        let (first_word, last_word) = super::ValidBits::word_span(start, end);
        let valid = self.block_valid[block as usize];
        let mut copied = 0u32;
        // Bound: one pass over the block's bit words; one step per valid slot.
        for word_index in first_word..=last_word {
            let mut bits = self.valid_bits.take_word(word_index, start, end);
            while bits != 0 {
                let slot = (word_index * 64 + u64::from(bits.trailing_zeros())) as u32;
                bits &= bits - 1;
                let lba = self.p2l[slot as usize];
                let open = self.open[gc_point];
                if open.group == NONE || open.next_offset >= self.group_slots(open.group) {
                    self.replace_open(gc_point, counters, false)?;
                }
                let target = self.take_gc_slot(gc_point, counters);
                self.p2l[target as usize] = lba;
                self.l2p[lba as usize] = target;
                self.valid_bits.set(target);
                copied += 1;
            }
        }
        assert_eq!(copied, valid, "block {block}: copied {copied} of {valid} valid slots");
        let group = self.block_group[block as usize] as usize;
        self.block_valid[block as usize] = 0;
        self.group_valid[group] -= copied;
        Ok(())
    }

    fn take_gc_slot(&mut self, gc_point: usize, counters: &mut Counters) -> u32 {
        let open = self.open[gc_point];
        let slot = self.slot_at(open.group, open.next_offset);
        self.open[gc_point].next_offset += 1;
        self.block_valid[(slot / self.slots_per_block) as usize] += 1;
        self.group_valid[open.group as usize] += 1;
        if (open.next_offset + 1) & self.page_mask == 0 {
            counters.flash_gc_bytes += self.flash_page_bytes;
        }
        // In 4 KiB blocks, as the counter is named: a page-sized slot is several.
        counters.gc_copied_blocks += 1 << self.lba_shift;
        self.clock += 1;
        slot
    }

    /// Returns an emptied block to its chip's pool; a group whose last block goes is freed.
    fn erase_block(&mut self, block: u32, counters: &mut Counters) {
        let index = block as usize;
        assert_eq!(self.block_valid[index], 0);
        let group = self.block_group[index];
        assert!(group != NONE);
        self.block_group[index] = NONE;
        self.block_erases[index] += 1;
        counters.block_erases += 1;
        let chip = block / self.blocks_per_chip;
        self.free_by_chip[chip as usize].push_back(block);
        self.free_blocks += 1;
        let g = group as usize;
        self.group_live_blocks[g] -= 1;
        if self.group_live_blocks[g] == 0 {
            assert_eq!(self.group_valid[g], 0);
            self.group_state[g] = SuperblockState::Free;
            self.group_width[g] = 0;
            self.free_groups.push(group);
        }
    }

    /// Checks the maps against each other and the per-block and per-group counts (tests).
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut block_valid = vec![0u32; self.block_valid.len()];
        for (lba, &slot) in self.l2p.iter().enumerate() {
            if slot == super::UNMAPPED {
                continue;
            }
            if !self.valid_bits.get(slot) || self.p2l[slot as usize] != lba as u32 {
                return Err(format!("l2p[{lba}] = {slot} but p2l or the valid bit disagree"));
            }
            block_valid[(slot / self.slots_per_block) as usize] += 1;
        }
        if block_valid != self.block_valid {
            return Err("per-block valid counts differ from the mapped slots".into());
        }
        let mut group_valid = vec![0u32; self.group_valid.len()];
        for (block, &group) in self.block_group.iter().enumerate() {
            if group == NONE {
                if block_valid[block] != 0 {
                    return Err(format!("free block {block} holds valid slots"));
                }
                continue;
            }
            group_valid[group as usize] += block_valid[block];
        }
        if group_valid != self.group_valid {
            return Err("per-group valid counts differ from their blocks'".into());
        }
        let free: u64 = self.free_by_chip.iter().map(|f| f.len() as u64).sum();
        if free != self.free_blocks {
            return Err(format!("{free} blocks in the pools, {} counted", self.free_blocks));
        }
        Ok(())
    }
}
