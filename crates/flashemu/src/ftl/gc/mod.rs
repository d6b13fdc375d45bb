//! GC mechanism: copy a victim's valid slots to a GC superblock, then erase the victim.
//! Which victim is the policy's business (policy.rs); this file only carries the choice out.
//!
//! Trigger: a host handle needs a new superblock and taking one would leave fewer than
//! `free_superblocks_low` free. GC then reclaims victims until `max(high, low + 1)` are free.
//! At least `low >= 1` superblocks are free when GC starts, and each victim needs at most one
//! new GC superblock before its own erase gives one back, so GC can always finish a victim.
use super::valid_bits::ValidBits;
use super::{Ftl, OpenSuperblock, SuperblockState, NO_SUPERBLOCK, OWNER_SHARED};
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
    /// This is where a full device spends most of its time (WAF - 1 copies per host write).
    /// Each copy's `l2p` update is a store to a random LBA; the loop keeps nothing else on
    /// its path (valid slots come from the victim's bit words, the destination's bits and
    /// counts are settled once per run), so the CPU keeps many of those stores in flight.
    fn relocate(&mut self, victim: u32, counters: &mut Counters) -> Result<(), EmuError> {
        let index = victim as usize;
        assert_eq!(self.state[index], SuperblockState::Sealed);
        let slots = self.slots_per_superblock;
        let valid = self.valid[index];
        counters.record_victim(valid, slots);
        let destination = if self.gc_open.len() == 1 { 0 } else { usize::from(self.owner[index]) };
        assert!(destination < self.gc_open.len());
        if self.gc_open[destination].next_offset >= slots {
            self.replace_gc_superblock(destination)?;
        }
        let mut open = self.gc_open[destination];
        let mut run_start = open.next_offset;
        let mut copied = 0u32;
        let base = u64::from(victim) * u64::from(slots);
        let (first_word, last_word) = ValidBits::word_span(base, base + u64::from(slots));
        // Bound: one pass over the victim's words; one inner step per valid slot.
        for word_index in first_word..=last_word {
            let mut bits = self.valid_bits.take_word(word_index, base, base + u64::from(slots));
            while bits != 0 {
                let slot = word_index * 64 + u64::from(bits.trailing_zeros());
                bits &= bits - 1;
                if open.next_offset >= slots {
                    // Cold: at most once per victim (it holds at most one superblock of data).
                    self.finish_gc_run(destination, open, run_start, counters);
                    self.replace_gc_superblock(destination)?;
                    open = self.gc_open[destination];
                    run_start = 0;
                }
                let lba = self.p2l[slot as usize];
                let target = open.superblock * slots + open.next_offset;
                self.p2l[target as usize] = lba;
                self.l2p[lba as usize] = target;
                open.next_offset += 1;
                copied += 1;
            }
        }
        self.finish_gc_run(destination, open, run_start, counters);
        assert_eq!(copied, valid, "victim {victim}: copied {copied} of {valid} valid slots");
        self.valid[index] = 0;
        Ok(())
    }

    /// Settles a run of GC copies into `open` from offset `run_start`: its valid bits and
    /// count, the flash pages it completed, and the clock.
    fn finish_gc_run(
        &mut self,
        destination: usize,
        open: OpenSuperblock,
        run_start: u32,
        counters: &mut Counters,
    ) {
        let copied = open.next_offset - run_start;
        let slots = self.slots_per_superblock;
        let first = u64::from(open.superblock) * u64::from(slots);
        self.valid_bits
            .set_range(first + u64::from(run_start), first + u64::from(open.next_offset));
        self.gc_open[destination] = open;
        self.valid[open.superblock as usize] += copied;
        let slots_per_page = self.page_mask + 1;
        let pages = open.next_offset / slots_per_page - run_start / slots_per_page;
        counters.flash_gc_bytes += u64::from(pages) * self.flash_page_bytes;
        counters.gc_copied_blocks += u64::from(copied);
        self.clock += u64::from(copied);
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
