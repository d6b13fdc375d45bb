//! The `[plan]` section: 004's flexible superblocks and in-SSD lifetime prediction, and the
//! baselines 004 compares them with. Absent (`None`) by default: the conventional FTL then runs
//! exactly as before and the section is left out of the TOML and JSON.
use serde::{Deserialize, Serialize};

/// Which of 004's schemes the device runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanScheme {
    /// Full-width superblocks, one open host superblock, greedy GC by superblock (004's
    /// "baseline").
    Plain,
    /// Full-width superblocks, but GC victims are single blocks with the fewest valid pages.
    PartialGc,
    /// Full-width superblocks, one open superblock per host stream (`Placement::Stream`).
    MultiStream,
    /// Full-width superblocks, streams chosen inside the device by AutoStream's SFR rule.
    AutoStream,
    /// Big and small superblocks by request size, one default superblock of each.
    PlanNoPred,
    /// Big and small superblocks by request size, and by predicted lifetime within each.
    PlanPred,
}

impl PlanScheme {
    pub const ALL: [PlanScheme; 6] = [
        PlanScheme::Plain,
        PlanScheme::PartialGc,
        PlanScheme::MultiStream,
        PlanScheme::AutoStream,
        PlanScheme::PlanNoPred,
        PlanScheme::PlanPred,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PlanScheme::Plain => "plain",
            PlanScheme::PartialGc => "partial-gc",
            PlanScheme::MultiStream => "multi-stream",
            PlanScheme::AutoStream => "autostream",
            PlanScheme::PlanNoPred => "plan-nopred",
            PlanScheme::PlanPred => "plan-pred",
        }
    }

    pub fn parse(text: &str) -> Option<PlanScheme> {
        let normalized = text.trim().to_ascii_lowercase().replace('_', "-");
        PlanScheme::ALL.into_iter().find(|s| s.name() == normalized)
    }

    /// Whether the scheme has small superblocks (and routes requests by size).
    pub fn flexible(self) -> bool {
        matches!(self, PlanScheme::PlanNoPred | PlanScheme::PlanPred)
    }
}

/// 004's settings are the defaults (sec. 3, 4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanConfig {
    pub scheme: PlanScheme,
    /// Chips of each channel a small superblock spans: 2 of 8 is 004's 1/4 parallelism. Big
    /// superblocks span every chip.
    pub small_chips_per_channel: u32,
    /// Requests spanning this many flash pages or more go to big superblocks (004: 8).
    pub big_request_pages: u32,
    /// Flash pages per predictor (and AutoStream) chunk (004: 32). A power of two.
    pub chunk_pages: u32,
    /// Lifetime classes, each with a big and a small open superblock (004: 8 and 8).
    pub lifetime_classes: u32,
    /// Weight of the old history lifetime in the new one (004: 0.1).
    pub history_weight: f64,
    /// One predictor time unit: host 4 KiB writes when timing is off, nanoseconds of device
    /// time when it is on. 004's unit is the second.
    pub time_unit: u64,
    /// AutoStream's stream count.
    pub autostream_streams: u32,
    /// AutoStream halves a chunk's write count once per this many time units since its last
    /// write (the "recency" of SFR).
    pub autostream_decay_units: u64,
}

/// Bounds that keep the 4-byte predictor state and the open-superblock table small.
pub(crate) const LIFETIME_CLASSES_MAX: u32 = 16;
pub(crate) const STREAMS_MAX: u32 = 64;
pub(crate) const CHUNK_PAGES_MAX: u32 = 1 << 16;

impl Default for PlanConfig {
    fn default() -> PlanConfig {
        PlanConfig {
            scheme: PlanScheme::PlanPred,
            small_chips_per_channel: 2,
            big_request_pages: 8,
            chunk_pages: 32,
            lifetime_classes: 8,
            history_weight: 0.1,
            time_unit: 2048,
            autostream_streams: 8,
            autostream_decay_units: 16,
        }
    }
}

impl PlanConfig {
    /// The first field that cannot hold, and why; None when valid for `chips_per_channel`.
    pub(crate) fn problem(&self, chips_per_channel: u32) -> Option<(&'static str, String)> {
        let small = self.small_chips_per_channel;
        if small == 0 || small > chips_per_channel || !chips_per_channel.is_multiple_of(small) {
            return Some((
                "plan.small_chips_per_channel",
                format!("{small} must divide chips_per_channel ({chips_per_channel})"),
            ));
        }
        if self.big_request_pages == 0 {
            return Some(("plan.big_request_pages", "must be >= 1".into()));
        }
        if !self.chunk_pages.is_power_of_two() || self.chunk_pages > CHUNK_PAGES_MAX {
            return Some((
                "plan.chunk_pages",
                format!("{} is not a power of two up to {CHUNK_PAGES_MAX}", self.chunk_pages),
            ));
        }
        if !(1..=LIFETIME_CLASSES_MAX).contains(&self.lifetime_classes) {
            return Some((
                "plan.lifetime_classes",
                format!("{} is not in 1..={LIFETIME_CLASSES_MAX}", self.lifetime_classes),
            ));
        }
        if !(self.history_weight.is_finite() && (0.0..1.0).contains(&self.history_weight)) {
            return Some((
                "plan.history_weight",
                format!("{} is not in [0, 1)", self.history_weight),
            ));
        }
        if self.time_unit == 0 {
            return Some(("plan.time_unit", "must be >= 1".into()));
        }
        if !(1..=STREAMS_MAX).contains(&self.autostream_streams) {
            return Some((
                "plan.autostream_streams",
                format!("{} is not in 1..={STREAMS_MAX}", self.autostream_streams),
            ));
        }
        if self.autostream_decay_units == 0 {
            return Some(("plan.autostream_decay_units", "must be >= 1".into()));
        }
        None
    }
}
