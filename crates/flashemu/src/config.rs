//! Device configuration: geometry, over-provisioning, GC, interface and data store.
//!
//! A `Config` is a plain value: built from a preset, a TOML file, and `key=value` overrides
//! (`Config::set("op", "0.28")`), then validated. Invalid geometry names the field.
//!
//! This file holds the types only. Each way of building or reading them owns its methods on
//! `Config` in its own module, above the types: presets in `presets`, TOML and overrides in
//! `keys`, the checks in `validate` (which read the derived layout and the FTL's reserve), and
//! the derived sizes in [`crate::layout`]. So the modules that read a configuration name the
//! types without the types calling back into them.
use serde::{Deserialize, Serialize};

pub use crate::timing::config::TimingConfig;

mod cczns;
mod keys;
mod plan;
mod presets;
mod validate;
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
