//! GC mechanism: copy a victim's valid slots to a GC superblock, then erase the victim.
//! Which victim is the policy's business (policy.rs); this file only carries the choice out.
//!
//! Trigger: a host handle needs a new superblock and taking one would leave fewer than
//! `free_superblocks_low` free. GC then reclaims victims until `max(high, low + 1)` are free.
//! At least `low >= 1` superblocks are free when GC starts, and each victim needs at most one
//! new GC superblock before its own erase gives one back, so GC can always finish a victim.
use super::{Ftl, OpenSuperblock, SuperblockState, NO_SUPERBLOCK, OWNER_SHARED, UNMAPPED};
use crate::{Counters, EmuError};

pub(crate) mod policy;

impl Ftl {
    pub(super) fn collect(&mut self, counters: &mut Counters) -> Result<(), EmuError> {
        counters.gc_invocations += 1;
        let target = self.gc_free_target as usize;
        // Bound: the OP check in `validate` leaves at least one superblock's worth of stale
        // slots among the sealed superblocks, so one pass over them (FIFO), or as many greedy
        // rounds, nets at least one free superblock; `target + 1` passes are enough. Reaching
        // the bound means no progress, which a valid config rules out.
        let rounds_max = self.state.len() * (target + 1);
        for _ in 0..rounds_max {
            if self.free.len() >= target {
                break;
            }
            self.buckets.settle();
            let candidates = policy::Candidates {
                buckets: &self.buckets,
                state: &self.state,
                valid: &self.valid,
                sealed_at: &self.sealed_at,
                slots_per_superblock: self.slots_per_superblock,
                now: self.clock,
            };
            let Some(victim) = policy::choose(
                self.gc_config.policy,
                self.gc_config.random_d,
                &candidates,
                &mut self.rng,
            ) else {
                break;
            };
            // A wholly valid victim (FIFO, random-d) frees nothing by itself but is still
            // copied: FIFO must move on to the next oldest, and the copy costs what it costs.
            self.buckets.remove(victim);
            self.relocate(victim, counters)?;
            self.erase(victim, counters);
        }
        Ok(())
    }

    /// Copies the victim's valid slots, in slot order, into its GC destination.
    ///
    /// This loop is where a full device spends most of its time (WAF - 1 copies per host
    /// write), so it copies in runs bounded by the room left in the destination and settles
    /// the counts once per run instead of once per slot.
    fn relocate(&mut self, victim: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let index = victim as usize;
        assert_eq!(self.state[index], SuperblockState::Sealed);
        let slots = self.slots_per_superblock;
        counters.record_victim(self.valid[index], slots);
        let destination = if self.gc_open.len() == 1 { 0 } else { usize::from(self.owner[index]) };
        assert!(destination < self.gc_open.len());
        let base = index * slots as usize;
        let end = base + slots as usize;
        let mut slot = base;
        // Bound: every run either exhausts the destination (at most one new superblock per
        // victim, since a victim holds at most one superblock of data) or the victim.
        for _ in 0..=slots {
            if self.valid[index] == 0 {
                break;
            }
            if self.gc_open[destination].next_offset >= slots {
                self.replace_gc_superblock(destination)?;
            }
            let open = self.gc_open[destination];
            let room = (slots - open.next_offset).min(self.valid[index]);
            let target_base = open.superblock * slots + open.next_offset;
            let mut copied = 0u32;
            while copied < room && slot < end {
                let lba = self.p2l[slot];
                slot += 1;
                if lba == UNMAPPED {
                    continue;
                }
                let target = target_base + copied;
                self.p2l[target as usize] = lba;
                self.l2p[lba as usize] = target;
                copied += 1;
            }
            let next_offset = open.next_offset + copied;
            self.gc_open[destination].next_offset = next_offset;
            self.valid[open.superblock as usize] += copied;
            self.valid[index] -= copied;
            let slots_per_page = self.page_mask + 1;
            let pages = next_offset / slots_per_page - open.next_offset / slots_per_page;
            counters.flash_gc_bytes += u64::from(pages) * self.flash_page_bytes;
            counters.gc_copied_blocks += u64::from(copied);
            self.clock += u64::from(copied);
        }
        assert_eq!(self.valid[index], 0);
        // The copied entries still name their LBAs; the victim is about to be erased.
        self.p2l[base..end].fill(UNMAPPED);
        Ok(())
    }

    fn replace_gc_superblock(&mut self, destination: usize) -> Result<(), EmuError> {
        let current = self.gc_open[destination];
        if current.superblock != NO_SUPERBLOCK {
            self.seal(current.superblock);
        }
        self.gc_open[destination] = OpenSuperblock::NONE;
        let owner = if self.gc_open.len() == 1 { OWNER_SHARED } else { destination as u16 };
        let superblock = self.take_free(owner)?;
        self.gc_open[destination] = OpenSuperblock { superblock, next_offset: 0 };
        Ok(())
    }

    fn erase(&mut self, victim: u32, counters: &mut Counters) {
        let index = victim as usize;
        assert_eq!(self.valid[index], 0);
        self.state[index] = SuperblockState::Free;
        self.owner[index] = OWNER_SHARED;
        self.erases[index] += 1;
        counters.superblock_erases += 1;
        counters.block_erases += u64::from(self.blocks_per_superblock);
        self.free.push_back(victim);
    }
}
