//! Whether a configuration describes a device the emulator can build: every field in range,
//! and room for the logical capacity beside what GC and the open superblocks keep. It reads the
//! derived layout and the FTL's PLAN reserve, which read the configuration: so the check sits
//! above them, not in `config` beside the types.
use crate::config::{Config, Interface, PlanConfig, StoreKind};
use crate::error::ConfigError;

/// Upper bounds that keep every derived quantity inside its integer type and every per-device
/// table a sane size. They are far above any device this emulator is meant for.
const CHANNELS_MAX: u32 = 1024;
const CHIPS_PER_CHANNEL_MAX: u32 = 1024;
const HANDLES_MAX: u32 = 1024;
const OP_MAX: f64 = 16.0;

impl Config {
    /// Checks the geometry and every field; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let g = &self.geometry;
        check(g.channels >= 1 && g.channels <= CHANNELS_MAX, "geometry.channels", || {
            format!("{} is not in 1..={CHANNELS_MAX}", g.channels)
        })?;
        check(
            g.chips_per_channel >= 1 && g.chips_per_channel <= CHIPS_PER_CHANNEL_MAX,
            "geometry.chips_per_channel",
            || format!("{} is not in 1..={CHIPS_PER_CHANNEL_MAX}", g.chips_per_channel),
        )?;
        check(g.blocks_per_chip >= 1, "geometry.blocks_per_chip", || "must be >= 1".into())?;
        check(g.pages_per_block >= 1, "geometry.pages_per_block", || "must be >= 1".into())?;
        check(
            g.flash_page_bytes == 4096 || g.flash_page_bytes == 16384,
            "geometry.flash_page_bytes",
            || format!("{} is neither 4096 nor 16384", g.flash_page_bytes),
        )?;
        check(
            g.superblock_chips_per_channel >= 1
                && g.superblock_chips_per_channel <= g.chips_per_channel
                && g.chips_per_channel.is_multiple_of(g.superblock_chips_per_channel),
            "geometry.superblock_chips_per_channel",
            || {
                format!(
                    "{} must divide chips_per_channel ({})",
                    g.superblock_chips_per_channel, g.chips_per_channel
                )
            },
        )?;
        // Physical slots are addressed by u32 in the FTL maps (one reserved as "unmapped").
        let slots_per_page = u64::from(g.flash_page_bytes) / crate::LBA_BYTES;
        let physical_slots = u64::from(g.channels)
            * u64::from(g.chips_per_channel)
            * u64::from(g.blocks_per_chip)
            * u64::from(g.pages_per_block)
            * slots_per_page;
        check(physical_slots < u64::from(u32::MAX), "geometry.blocks_per_chip", || {
            format!("device of {physical_slots} 4 KiB slots exceeds the 2^32 - 1 the maps address")
        })?;
        let layout = self.layout();
        check(layout.superblock_count >= 2, "geometry.blocks_per_chip", || {
            format!("the device has {} superblocks; at least 2 are needed", layout.superblock_count)
        })?;
        check(self.op.is_finite() && self.op >= 0.0 && self.op <= OP_MAX, "op", || {
            format!("{} is not in 0..={OP_MAX}", self.op)
        })?;
        let gc = &self.gc;
        check(gc.free_superblocks_low >= 1, "gc.free_superblocks_low", || {
            "must be >= 1: GC needs a free superblock to copy into".into()
        })?;
        check(
            gc.free_superblocks_high >= gc.free_superblocks_low,
            "gc.free_superblocks_high",
            || {
                format!(
                    "{} is below free_superblocks_low ({})",
                    gc.free_superblocks_high, gc.free_superblocks_low
                )
            },
        )?;
        check(gc.random_d >= 1 && gc.random_d <= layout.superblock_count, "gc.random_d", || {
            format!("{} is not in 1..={}", gc.random_d, layout.superblock_count)
        })?;
        match self.interface {
            Interface::Conventional { streams } => {
                check((1..=HANDLES_MAX).contains(&streams), "interface.streams", || {
                    format!("{streams} is not in 1..={HANDLES_MAX}")
                })?;
            }
            Interface::Fdp { ruh_count, .. } => {
                check((1..=HANDLES_MAX).contains(&ruh_count), "interface.ruh_count", || {
                    format!("{ruh_count} is not in 1..={HANDLES_MAX}")
                })?;
            }
            Interface::Zns { zone_capacity_blocks, max_open_zones, max_active_zones } => {
                let zone_blocks = u64::from(layout.slots_per_superblock);
                check(
                    zone_capacity_blocks <= zone_blocks,
                    "interface.zone_capacity_blocks",
                    || {
                        format!(
                            "{zone_capacity_blocks} exceeds the zone size of {zone_blocks} blocks"
                        )
                    },
                )?;
                check(
                    max_active_zones >= 1 && max_active_zones <= layout.superblock_count,
                    "interface.max_active_zones",
                    || format!("{max_active_zones} is not in 1..={}", layout.superblock_count),
                )?;
                check(
                    max_open_zones >= 1 && max_open_zones <= max_active_zones,
                    "interface.max_open_zones",
                    || {
                        format!(
                            "{max_open_zones} is not in 1..=max_active_zones ({max_active_zones})"
                        )
                    },
                )?;
            }
        }
        if !matches!(self.interface, Interface::Zns { .. }) {
            // The FTL must always find a superblock with an invalid slot when it needs space:
            // live data must fit outside the free reserve and the open superblocks.
            let usable_superblocks = u64::from(layout.superblock_count)
                .saturating_sub(u64::from(layout.reserved_superblocks));
            let usable_slots = usable_superblocks * u64::from(layout.slots_per_superblock);
            check(layout.logical_blocks >= 1, "op", || "leaves no logical capacity".into())?;
            check(layout.logical_blocks < usable_slots, "op", || {
                format!(
                    "{} leaves {} logical blocks but only {usable_slots} fit beside the {} \
                     superblocks GC reserves and keeps open; raise op or shrink the reserve",
                    self.op, layout.logical_blocks, layout.reserved_superblocks
                )
            })?;
        }
        if let Some((field, reason)) = self.timing.problem() {
            return Err(ConfigError::Invalid { field, reason });
        }
        if let Some(plan) = &self.plan {
            self.validate_plan(plan)?;
        }
        if let Some(cczns) = &self.cczns {
            check(matches!(self.interface, Interface::Zns { .. }), "cczns", || {
                "compressed write and decompressed read need the ZNS interface".into()
            })?;
            if let Some((field, reason)) = cczns.problem() {
                return Err(ConfigError::Invalid { field, reason });
            }
        }
        if let StoreKind::File(path) = &self.store {
            check(!path.as_os_str().is_empty(), "store.path", || "is empty".into())?;
        }
        Ok(())
    }
}

impl Config {
    /// PLAN runs on a conventional device whose geometry describes full-width superblocks
    /// (the big ones); the open superblocks it keeps and the GC reserve must leave room for
    /// the logical capacity.
    fn validate_plan(&self, plan: &PlanConfig) -> Result<(), ConfigError> {
        let g = &self.geometry;
        check(matches!(self.interface, Interface::Conventional { .. }), "plan.scheme", || {
            "PLAN needs the conventional interface".into()
        })?;
        check(
            g.superblock_chips_per_channel == g.chips_per_channel,
            "geometry.superblock_chips_per_channel",
            || {
                format!(
                    "PLAN sizes its own superblocks: set it to chips_per_channel ({})",
                    g.chips_per_channel
                )
            },
        )?;
        if let Some((field, reason)) = plan.problem(g.chips_per_channel) {
            return Err(ConfigError::Invalid { field, reason });
        }
        let layout = self.layout();
        let reserved_blocks = crate::ftl::plan_reserved_blocks(self, plan, &layout);
        let total_blocks =
            u64::from(g.channels) * u64::from(g.chips_per_channel) * u64::from(g.blocks_per_chip);
        let slots_per_block = u64::from(g.pages_per_block) * u64::from(layout.slots_per_page);
        let usable_slots = total_blocks.saturating_sub(reserved_blocks) * slots_per_block;
        check(layout.logical_blocks < usable_slots, "op", || {
            format!(
                "{} leaves {} logical blocks but only {usable_slots} fit beside the {reserved_blocks} \
                 flash blocks PLAN keeps open or free; raise op or blocks_per_chip",
                self.op, layout.logical_blocks
            )
        })
    }
}

fn check(
    ok: bool,
    field: &'static str,
    reason: impl FnOnce() -> String,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Invalid { field, reason: reason() })
    }
}
