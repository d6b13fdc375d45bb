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
        // Bound: each round erases one superblock; more rounds than superblocks means no
        // progress, which validate()'s capacity check rules out.
        for _ in 0..self.state.len() {
            if self.free.len() >= target {
                break;
            }
            let candidates = policy::Candidates {
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
            if self.valid[victim as usize] >= self.slots_per_superblock {
                // Copying a full superblock frees nothing. Only reachable when live data
                // fills every sealed superblock, which the OP check prevents.
                break;
            }
            self.relocate(victim, counters)?;
            self.erase(victim, counters);
        }
        Ok(())
    }

    fn relocate(&mut self, victim: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let index = victim as usize;
        assert_eq!(self.state[index], SuperblockState::Sealed);
        counters.record_victim(self.valid[index], self.slots_per_superblock);
        let destination = if self.gc_open.len() == 1 { 0 } else { usize::from(self.owner[index]) };
        assert!(destination < self.gc_open.len());
        let base = victim as usize * self.slots_per_superblock as usize;
        for slot in base..base + self.slots_per_superblock as usize {
            if self.valid[index] == 0 {
                break;
            }
            let lba = self.p2l[slot];
            if lba == UNMAPPED {
                continue;
            }
            let target = self.take_gc_slot(destination, counters)?;
            self.p2l[slot] = UNMAPPED;
            self.valid[index] -= 1;
            self.p2l[target as usize] = lba;
            self.l2p[lba as usize] = target;
            self.valid[(target / self.slots_per_superblock) as usize] += 1;
            counters.gc_copied_blocks += 1;
        }
        assert_eq!(self.valid[index], 0);
        Ok(())
    }

    fn take_gc_slot(
        &mut self,
        destination: usize,
        counters: &mut Counters,
    ) -> Result<u32, EmuError> {
        if self.gc_open[destination].next_offset >= self.slots_per_superblock {
            let current = self.gc_open[destination];
            if current.superblock != NO_SUPERBLOCK {
                self.seal(current.superblock);
            }
            self.gc_open[destination] = OpenSuperblock::NONE;
            let owner = if self.gc_open.len() == 1 { OWNER_SHARED } else { destination as u16 };
            let superblock = self.take_free(owner)?;
            self.gc_open[destination] = OpenSuperblock { superblock, next_offset: 0 };
        }
        let open = &mut self.gc_open[destination];
        let slot = open.superblock * self.slots_per_superblock + open.next_offset;
        open.next_offset += 1;
        if open.next_offset & self.page_mask == 0 {
            counters.flash_gc_bytes += self.flash_page_bytes;
        }
        self.clock += 1;
        Ok(slot)
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
