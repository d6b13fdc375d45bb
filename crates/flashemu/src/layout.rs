//! Sizes derived from a `Config`: superblocks, slots, logical capacity, the GC reserve.
//!
//! A *slot* is one 4 KiB logical block's worth of flash: a 16 KiB flash page holds 4 slots. A
//! superblock is one block from each chip it spans, across all channels; the FTL fills it slot by
//! slot and GC reclaims it whole. Physical slot `s` lives in superblock `s / slots_per_superblock`.
use serde::Serialize;

use crate::config::{Config, FdpIsolation, Interface};
use crate::LBA_BYTES;

impl Config {
    /// The derived sizes (superblocks, slots, logical capacity). Meaningful only for a valid
    /// config.
    pub fn layout(&self) -> Layout {
        Layout::of(self)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// 4 KiB slots per flash page: 1 (4 KiB pages) or 4 (16 KiB pages).
    pub slots_per_page: u32,
    pub flash_page_bytes: u32,
    /// Physical blocks erased together when one superblock is erased.
    pub blocks_per_superblock: u32,
    pub slots_per_superblock: u32,
    pub superblock_count: u32,
    /// Superblock groups per channel: chips_per_channel / superblock_chips_per_channel.
    pub chip_groups: u32,
    pub physical_slots: u64,
    /// Host-visible capacity in 4 KiB blocks. ZNS: every slot (zone_count * zone size).
    pub logical_blocks: u64,
    /// Open superblocks for host data (one per stream / RUH; none on ZNS).
    pub host_open_superblocks: u32,
    /// Open superblocks GC copies into (1, or one per RUH when persistently isolated).
    pub gc_open_superblocks: u32,
    /// GC reclaims until this many superblocks are free: max(high, low + 1).
    pub gc_free_target: u32,
    /// Superblocks that never hold settled data: free target + every open superblock. Live
    /// data must fit in the rest, which `Config::validate` checks.
    pub reserved_superblocks: u32,
}

impl Layout {
    pub fn of(config: &Config) -> Layout {
        let g = &config.geometry;
        // `max(1)` guards keep this total for an invalid config; validate() reports the field.
        let slots_per_page = (u64::from(g.flash_page_bytes) / LBA_BYTES).max(1) as u32;
        let sb_chips_per_channel = g.superblock_chips_per_channel.max(1);
        let chip_groups = (g.chips_per_channel / sb_chips_per_channel).max(1);
        let blocks_per_superblock = g.channels.saturating_mul(sb_chips_per_channel);
        let slots_per_superblock =
            blocks_per_superblock.saturating_mul(g.pages_per_block).saturating_mul(slots_per_page);
        let superblock_count = g.blocks_per_chip.saturating_mul(chip_groups);
        let physical_slots = u64::from(superblock_count) * u64::from(slots_per_superblock);
        let (host_open_superblocks, gc_open_superblocks) = match config.interface {
            Interface::Conventional { streams } => (streams, 1),
            Interface::Fdp { ruh_count, isolation: FdpIsolation::InitiallyIsolated } => {
                (ruh_count, 1)
            }
            Interface::Fdp { ruh_count, isolation: FdpIsolation::PersistentlyIsolated } => {
                (ruh_count, ruh_count)
            }
            Interface::Zns { .. } => (0, 0),
        };
        let gc_free_target =
            config.gc.free_superblocks_high.max(config.gc.free_superblocks_low.saturating_add(1));
        let reserved_superblocks = gc_free_target
            .saturating_add(host_open_superblocks)
            .saturating_add(gc_open_superblocks);
        let logical_blocks = match config.interface {
            Interface::Zns { .. } => physical_slots,
            _ => {
                // OP = (physical - logical) / logical, so logical = physical / (1 + OP); rounded
                // down to whole flash pages so a sequential fill programs whole pages only.
                let op = if config.op.is_finite() && config.op >= 0.0 { config.op } else { 0.0 };
                let logical = (physical_slots as f64 / (1.0 + op)).floor() as u64;
                logical - logical % u64::from(slots_per_page)
            }
        };
        Layout {
            slots_per_page,
            flash_page_bytes: g.flash_page_bytes,
            blocks_per_superblock,
            slots_per_superblock,
            superblock_count,
            chip_groups,
            physical_slots,
            logical_blocks,
            host_open_superblocks,
            gc_open_superblocks,
            gc_free_target,
            reserved_superblocks,
        }
    }

    pub fn superblock_bytes(&self) -> u64 {
        u64::from(self.slots_per_superblock) * LBA_BYTES
    }

    /// Physical block numbers (chip-major: `(channel * chips_per_channel + chip) *
    /// blocks_per_chip + block`) of the blocks making up `superblock`, passed to `visit`.
    pub fn for_each_block(&self, config: &Config, superblock: u32, mut visit: impl FnMut(usize)) {
        let g = &config.geometry;
        assert!(superblock < self.superblock_count);
        let block = superblock / self.chip_groups;
        let group = superblock % self.chip_groups;
        let span = g.superblock_chips_per_channel;
        for channel in 0..g.channels {
            for chip in group * span..(group + 1) * span {
                let chip_index =
                    u64::from(channel) * u64::from(g.chips_per_channel) + u64::from(chip);
                visit((chip_index * u64::from(g.blocks_per_chip) + u64::from(block)) as usize);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblocks_take_one_block_from_each_spanned_chip() {
        let mut config = Config::preset("cns").unwrap_or_else(|e| panic!("{e}"));
        config.geometry.superblock_chips_per_channel = 2;
        let layout = config.layout();
        // 8 channels x 2 chips = 16 blocks of 128 pages x 4 slots.
        assert_eq!(layout.blocks_per_superblock, 16);
        assert_eq!(layout.slots_per_superblock, 16 * 128 * 4);
        assert_eq!(layout.superblock_count, 64 * 2);
        let g = config.geometry;
        let mut seen = vec![0u32; (g.channels * g.chips_per_channel * g.blocks_per_chip) as usize];
        for superblock in 0..layout.superblock_count {
            let mut blocks = 0;
            layout.for_each_block(&config, superblock, |block| {
                seen[block] += 1;
                blocks += 1;
            });
            assert_eq!(blocks, layout.blocks_per_superblock);
        }
        // Every physical block belongs to exactly one superblock.
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn op_defines_logical_capacity() {
        let mut config = Config::preset("tiny").unwrap_or_else(|e| panic!("{e}"));
        config.op = 0.28;
        let layout = config.layout();
        // 2048 physical slots / 1.28 = 1600 logical blocks.
        assert_eq!(layout.physical_slots, 2048);
        assert_eq!(layout.logical_blocks, 1600);
        assert_eq!(layout.gc_free_target, 3);
        assert_eq!(layout.reserved_superblocks, 3 + 1 + 1);
    }
}
