//! Device configuration: geometry, over-provisioning, GC, interface and data store.
//!
//! A `Config` is a plain value: built from a preset, a TOML file, and `key=value` overrides
//! (`Config::set("op", "0.28")`), then validated. Invalid geometry names the field.
use serde::{Deserialize, Serialize};

use crate::layout::Layout;
pub use crate::timing::TimingConfig;
use crate::ConfigError;

mod cczns;
mod keys;
mod plan;
mod presets;
pub use cczns::CcznsConfig;
pub use plan::{PlanConfig, PlanGcTrigger, PlanMapUnit, PlanScheme};
pub use presets::PRESET_NAMES;

/// Physical layout of the flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub blocks_per_chip: u32,
    pub pages_per_block: u32,
    /// Flash page size: 4096 or 16384. The logical block is always 4 KiB.
    pub flash_page_bytes: u32,
    /// How many chips of each channel one superblock spans (1..=chips_per_channel).
    pub superblock_chips_per_channel: u32,
}

/// GC victim selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Age-aware cost-benefit: maximise age * (1 - u) / (2u).
    CostBenefit,
    /// Oldest sealed superblock first.
    Fifo,
    /// Greedy among `d` superblocks drawn at random.
    RandomD,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GcConfig {
    pub policy: GcPolicy,
    /// GC starts when free superblocks fall below this many.
    pub free_superblocks_low: u32,
    /// GC stops once this many are free again (>= free_superblocks_low).
    pub free_superblocks_high: u32,
    /// `d` for `GcPolicy::RandomD`.
    pub random_d: u32,
}

/// FDP GC isolation (TP4146).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FdpIsolation {
    /// GC may mix data from different handles in one destination RU.
    InitiallyIsolated,
    /// GC keeps each handle's data in RUs of its own.
    PersistentlyIsolated,
}

/// The host interface the flash sits behind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Interface {
    /// Page-mapping FTL; `streams` >= 1 open superblocks selectable by `Placement::Stream`.
    Conventional { streams: u32 },
    /// FDP: reclaim unit = superblock; `ruh_count` handles.
    Fdp { ruh_count: u32, isolation: FdpIsolation },
    /// ZNS: zones mapped onto superblocks, no device GC. `zone_capacity_blocks` = 0 means the
    /// whole zone (capacity = size).
    Zns { zone_capacity_blocks: u64, max_open_zones: u32, max_active_zones: u32 },
}

/// Where written bytes are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "path", rename_all = "kebab-case")]
pub enum StoreKind {
    /// Metadata only: reads return zeros. For fast simulation.
    None,
    Memory,
    File(std::path::PathBuf),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub geometry: Geometry,
    /// Over-provisioning: (physical - logical) / logical. Ignored by ZNS (no OP needed).
    pub op: f64,
    pub gc: GcConfig,
    pub interface: Interface,
    pub store: StoreKind,
    /// Seed for every random choice the device makes (random-d victims).
    pub seed: u64,
    /// Device time (off by default; left out of the TOML and JSON while off, so configs and
    /// their hashes read as before).
    #[serde(default, skip_serializing_if = "TimingConfig::is_off")]
    pub timing: TimingConfig,
    /// 004's flexible superblocks and their baselines (absent by default: the conventional FTL
    /// as before; left out of the TOML and JSON while absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanConfig>,
    /// 002's compressed-write / decompressed-read commands on a ZNS device (absent by default;
    /// left out of the TOML and JSON while absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cczns: Option<CcznsConfig>,
}

/// Upper bounds that keep every derived quantity inside its integer type and every per-device
/// table a sane size. They are far above any device this emulator is meant for.
const CHANNELS_MAX: u32 = 1024;
const CHIPS_PER_CHANNEL_MAX: u32 = 1024;
const HANDLES_MAX: u32 = 1024;
const OP_MAX: f64 = 16.0;

impl Config {
    /// Named presets: `cns`, `zns`, `fdp`, `tiny` (for tests).
    pub fn preset(name: &str) -> Result<Config, ConfigError> {
        presets::preset(name)
    }

    /// Parses a TOML document. With `preset = "cns"` the preset is the base and every other key
    /// (flat or in tables, e.g. `[geometry] channels = 4`) overrides it through [`Config::set`];
    /// without a preset the document must describe the whole config (as `to_toml` writes it).
    /// The result is validated.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        keys::from_toml(text)
    }

    /// The whole config as a TOML document that `from_toml` reads back to an equal value.
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    /// Overrides one field by dotted or flat key, e.g. `op`, `gc-policy`, `geometry.channels`.
    /// Underscores and dashes are interchangeable. Does not validate the whole config (several
    /// keys may need to change together); call [`Config::validate`] after the last override.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        keys::set(self, key, value)
    }

    /// The derived sizes (superblocks, slots, logical capacity). Meaningful only for a valid
    /// config.
    pub fn layout(&self) -> Layout {
        Layout::of(self)
    }

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
