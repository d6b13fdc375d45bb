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
    /// PLAN-Pred with the host's stream tag as the class (stream 0: the default superblocks):
    /// a perfect job classifier. Not 004's scheme; the reference its predictor is measured
    /// against when each job's data shares one lifetime.
    PlanOracle,
}

impl PlanScheme {
    pub const ALL: [PlanScheme; 7] = [
        PlanScheme::Plain,
        PlanScheme::PartialGc,
        PlanScheme::MultiStream,
        PlanScheme::AutoStream,
        PlanScheme::PlanNoPred,
        PlanScheme::PlanPred,
        PlanScheme::PlanOracle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PlanScheme::Plain => "plain",
            PlanScheme::PartialGc => "partial-gc",
            PlanScheme::MultiStream => "multi-stream",
            PlanScheme::AutoStream => "autostream",
            PlanScheme::PlanNoPred => "plan-nopred",
            PlanScheme::PlanPred => "plan-pred",
            PlanScheme::PlanOracle => "plan-oracle",
        }
    }

    pub fn parse(text: &str) -> Option<PlanScheme> {
        let normalized = text.trim().to_ascii_lowercase().replace('_', "-");
        PlanScheme::ALL.into_iter().find(|s| s.name() == normalized)
    }

    /// Whether the scheme has small superblocks (and routes requests by size).
    pub fn flexible(self) -> bool {
        matches!(self, PlanScheme::PlanNoPred | PlanScheme::PlanPred | PlanScheme::PlanOracle)
    }
}

/// When GC runs. 004's numbers come from its FEMU fork, whose trigger differs from an
/// on-demand collector; both are kept so a run can say which one it models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanGcTrigger {
    /// Collect only when opening a superblock would leave too few free blocks
    /// (`gc.free_superblocks_low`), up to `gc_free_target` full widths free.
    OnDemand,
    /// 004's FEMU: per chip. After every host command (read, write, trim) one victim is
    /// collected if some chip has fewer than `gc_background_free` of its blocks free and the
    /// victim has at least `gc_background_min_invalid` of its slots stale; before a write,
    /// victims are collected without that floor while some chip has fewer than
    /// `gc_foreground_free`. The victim is the lowest valid ratio among the superblocks that
    /// hold a block of that chip.
    PerChip,
}

impl PlanGcTrigger {
    pub fn name(self) -> &'static str {
        match self {
            PlanGcTrigger::OnDemand => "on-demand",
            PlanGcTrigger::PerChip => "per-chip",
        }
    }

    pub fn parse(text: &str) -> Option<PlanGcTrigger> {
        let normalized = text.trim().to_ascii_lowercase().replace('_', "-");
        [PlanGcTrigger::OnDemand, PlanGcTrigger::PerChip]
            .into_iter()
            .find(|t| t.name() == normalized)
    }
}

/// What one entry of the PLAN FTL's map covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanMapUnit {
    /// A 4 KiB LBA: writes fill flash pages four slots at a time.
    Slot,
    /// A whole flash page, as 004's FEMU maps (its logical page is its 16 KiB flash page:
    /// `lpn = sector / secs_per_pg`). A write programs every page it touches, all of it: a
    /// 4 KiB write into a 16 KiB page rewrites the page (the other 12 KiB are the page's
    /// current data; FEMU keeps data in host DRAM and charges no flash read for it).
    Page,
}

impl PlanMapUnit {
    pub fn name(self) -> &'static str {
        match self {
            PlanMapUnit::Slot => "slot",
            PlanMapUnit::Page => "page",
        }
    }

    pub fn parse(text: &str) -> Option<PlanMapUnit> {
        let normalized = text.trim().to_ascii_lowercase();
        [PlanMapUnit::Slot, PlanMapUnit::Page].into_iter().find(|u| u.name() == normalized)
    }
}

/// 004's settings are the defaults (sec. 3, 4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanConfig {
    pub scheme: PlanScheme,
    /// Chips of each channel a small superblock spans: 2 of 8 is 004's 1/4 parallelism.
    pub small_chips_per_channel: u32,
    /// Chips of each channel a big superblock (and GC's) spans; 0 = every chip (004). Below
    /// that, 004 Figure 1's reduced parallelism for every superblock.
    pub big_chips_per_channel: u32,
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
    pub gc_trigger: PlanGcTrigger,
    /// Per-chip trigger: background GC while a chip has fewer free blocks than this fraction
    /// of its blocks (004's FEMU: 0.25).
    pub gc_background_free: f64,
    /// Per-chip trigger: foreground GC before a write while a chip is below this (0.05).
    pub gc_foreground_free: f64,
    /// Per-chip trigger: background GC skips a victim with less than this fraction of its
    /// slots stale (0.125, FEMU's `pgs_per_line / 8`).
    pub gc_background_min_invalid: f64,
    /// What a map entry covers (004's FEMU: the 16 KiB page).
    pub map_unit: PlanMapUnit,
    /// 004's FEMU `max_streams` (16): when > 0, every scheme opens at start, and keeps open,
    /// the superblocks FEMU creates for its streams whether written or not: one more host
    /// superblock than streams (stream 0 is the default) and GC's, or with two widths (PLAN)
    /// half of that many big and as many small and GC's (FEMU's `ssd_init_write_pointer`).
    /// 004: "the same number of concurrently opened superblocks" for every scheme. 0: a
    /// scheme opens only the superblocks it writes.
    pub device_streams: u32,
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
            big_chips_per_channel: 0,
            gc_trigger: PlanGcTrigger::PerChip,
            gc_background_free: 0.25,
            gc_foreground_free: 0.05,
            gc_background_min_invalid: 0.125,
            map_unit: PlanMapUnit::Page,
            device_streams: 16,
        }
    }
}

impl PlanConfig {
    /// The first field that cannot hold, and why; None when valid for `chips_per_channel`.
    /// Chips per channel of a big superblock on a device with `chips_per_channel`.
    pub fn big_chips(&self, chips_per_channel: u32) -> u32 {
        if self.big_chips_per_channel == 0 {
            chips_per_channel
        } else {
            self.big_chips_per_channel
        }
    }

    /// The first field that cannot hold, and why; None when valid for `chips_per_channel`.
    pub(crate) fn problem(&self, chips_per_channel: u32) -> Option<(&'static str, String)> {
        let big = self.big_chips(chips_per_channel);
        if big > chips_per_channel || !chips_per_channel.is_multiple_of(big) {
            return Some((
                "plan.big_chips_per_channel",
                format!("{big} must divide chips_per_channel ({chips_per_channel})"),
            ));
        }
        let small = self.small_chips_per_channel;
        if small == 0 || small > big || !big.is_multiple_of(small) {
            return Some((
                "plan.small_chips_per_channel",
                format!("{small} must divide the big superblock's chips per channel ({big})"),
            ));
        }
        if let Some(problem) = self.trigger_problem() {
            return Some(problem);
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
        if self.device_streams > STREAMS_MAX {
            return Some((
                "plan.device_streams",
                format!("{} is not in 0..={STREAMS_MAX}", self.device_streams),
            ));
        }
        if self.autostream_decay_units == 0 {
            return Some(("plan.autostream_decay_units", "must be >= 1".into()));
        }
        None
    }

    fn trigger_problem(&self) -> Option<(&'static str, String)> {
        let fraction = |v: f64| v.is_finite() && (0.0..1.0).contains(&v);
        if !fraction(self.gc_background_free) {
            return Some((
                "plan.gc_background_free",
                format!("{} is not in [0, 1)", self.gc_background_free),
            ));
        }
        if !fraction(self.gc_foreground_free) || self.gc_foreground_free > self.gc_background_free {
            return Some((
                "plan.gc_foreground_free",
                format!(
                    "{} is not in [0, gc_background_free = {}]",
                    self.gc_foreground_free, self.gc_background_free
                ),
            ));
        }
        if !fraction(self.gc_background_min_invalid) {
            return Some((
                "plan.gc_background_min_invalid",
                format!("{} is not in [0, 1)", self.gc_background_min_invalid),
            ));
        }
        None
    }
}
