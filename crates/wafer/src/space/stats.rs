//! Space accounting: slots issued by purpose (user, GC copyback, later compensation and padding),
//! the valid ratio of every GC victim, and DB WAF over an interval or since the start. Slot
//! counts are exact (counted at reservation, where the write is decided); byte counts of the
//! device come from `device::Counted`, which the reports use for the headline figures.
use std::collections::VecDeque;

use super::zone::ZoneId;
use crate::device::WritePurpose;

/// GC records kept for inspection; older ones survive only in the sums.
pub const RECENT_GC_MAX: usize = 1024;

/// One GC victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcRecord {
    pub zone: ZoneId,
    pub valid_slots: u32,
    pub slots_per_zone: u32,
    /// Space clock (slots reserved so far) when the victim was chosen.
    pub clock: u64,
}

impl GcRecord {
    pub fn valid_ratio(&self) -> f64 {
        // Recorded from a zone's counts: its valid slots are some of its slots.
        debug_assert!(self.valid_slots <= self.slots_per_zone, "{self:?}");
        f64::from(self.valid_slots) / f64::from(self.slots_per_zone)
    }
}

/// Bins of the victims' valid-ratio histogram: bin i counts victims with a valid ratio in
/// [i / BINS, (i + 1) / BINS), the last bin including 1.
pub const VALID_RATIO_BINS: usize = 20;

/// Cumulative counters; `later.since(&earlier)` gives an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpaceCounters {
    #[serde(serialize_with = "crate::device::serialize_by_purpose")]
    pub issued_slots: [u64; WritePurpose::COUNT],
    pub gc_victims: u64,
    /// Sum over victims of their valid slots at choice time.
    pub gc_victim_valid_slots: u64,
    /// Sum over victims of their size in slots.
    pub gc_victim_slots: u64,
    /// Sum over victims of their live bytes at choice time (what GC copies: a packed slot is
    /// valid while any of its pages lives, so valid slots overstate it).
    pub gc_victim_live_bytes: u64,
    /// Victims by valid ratio at choice time (000 Figure 13a's distribution).
    pub gc_victim_valid_hist: [u64; VALID_RATIO_BINS],
    /// The placement policy's deathtime predictions (GDT).
    pub edt: super::placement::EdtCounters,
    /// NoWA: compensations (GC cycles that took a partly dead unit's remaining zones) and the
    /// valid slots they moved (part of the GC copies).
    pub nowa_compensations: u64,
    pub nowa_compensation_slots: u64,
    /// NoWA: the SSD units the model holds live now (a level, not a count).
    pub nowa_live_units: u64,
}

impl SpaceCounters {
    pub fn slots(&self, purpose: WritePurpose) -> u64 {
        let slots = self.issued_slots[purpose as usize];
        // The log, doublewrite and metadata areas lie outside the data zones (`check_room`).
        debug_assert!(
            !matches!(
                purpose,
                WritePurpose::Wal | WritePurpose::Doublewrite | WritePurpose::Metadata
            ) || slots == 0,
            "{slots} {purpose:?} slots counted in the data zones"
        );
        slots
    }
    /// Slots written for the user: eviction and checkpoint write-back.
    pub fn user_slots(&self) -> u64 {
        let user =
            self.slots(WritePurpose::UserEviction) + self.slots(WritePurpose::UserCheckpoint);
        // A part of the total: DB WAF divides the total by it and must not fall below 1.
        debug_assert!(user <= self.issued_total_slots(), "{user} user slots: {self:?}");
        user
    }
    /// Every slot the DB issued to the data zones.
    pub fn issued_total_slots(&self) -> u64 {
        let total = self.issued_slots.iter().try_fold(0u64, |sum, n| sum.checked_add(*n));
        // Counts of slots of one device: a sum past u64 means a counter wrapped.
        debug_assert!(total.is_some(), "issued slots overflow: {:?}", self.issued_slots);
        total.unwrap_or(u64::MAX)
    }
    /// DB WAF = issued slots / user slots; None before any user write.
    pub fn db_waf(&self) -> Option<f64> {
        let user = self.user_slots();
        let waf = (user > 0).then(|| self.issued_total_slots() as f64 / user as f64);
        // Every user slot is issued: the DB never writes less than the user asked.
        debug_assert!(waf.is_none_or(|w| w >= 1.0), "DB WAF {waf:?} below 1");
        waf
    }
    /// Mean valid ratio of the GC victims (the driver of DB WAF: 1 / (1 - ratio)).
    pub fn mean_victim_valid_ratio(&self) -> Option<f64> {
        // Each victim adds its valid slots and all its slots: a ratio within 0..=1.
        debug_assert!(self.gc_victim_valid_slots <= self.gc_victim_slots, "{self:?}");
        (self.gc_victim_slots > 0)
            .then(|| self.gc_victim_valid_slots as f64 / self.gc_victim_slots as f64)
    }
    /// Mean share of the victims' bytes still live (per page, not per slot).
    pub fn mean_victim_live_ratio(&self) -> Option<f64> {
        let bytes = self.gc_victim_slots * super::map::SLOT_BYTES;
        // A victim's live bytes fit in its slots.
        debug_assert!(self.gc_victim_live_bytes <= bytes, "{self:?}");
        (bytes > 0).then(|| self.gc_victim_live_bytes as f64 / bytes as f64)
    }
    pub fn since(&self, earlier: &SpaceCounters) -> SpaceCounters {
        // Cumulative counts: an earlier reading of the same space is never ahead of this one.
        debug_assert!(
            earlier.gc_victims <= self.gc_victims
                && earlier.gc_victim_slots <= self.gc_victim_slots,
            "space counters went backwards"
        );
        let mut d = *self;
        for (i, slots) in d.issued_slots.iter_mut().enumerate() {
            *slots = slots.saturating_sub(earlier.issued_slots[i]);
        }
        d.gc_victims = d.gc_victims.saturating_sub(earlier.gc_victims);
        d.gc_victim_valid_slots =
            d.gc_victim_valid_slots.saturating_sub(earlier.gc_victim_valid_slots);
        d.gc_victim_slots = d.gc_victim_slots.saturating_sub(earlier.gc_victim_slots);
        d.gc_victim_live_bytes =
            d.gc_victim_live_bytes.saturating_sub(earlier.gc_victim_live_bytes);
        for (bin, before) in d.gc_victim_valid_hist.iter_mut().zip(earlier.gc_victim_valid_hist) {
            *bin = bin.saturating_sub(before);
        }
        d.edt = d.edt.since(&earlier.edt);
        d.nowa_compensations = d.nowa_compensations.saturating_sub(earlier.nowa_compensations);
        d.nowa_compensation_slots =
            d.nowa_compensation_slots.saturating_sub(earlier.nowa_compensation_slots);
        d
    }

    /// The victims' valid-ratio CDF: (upper edge of each bin, share of victims at or below
    /// it); None without victims.
    pub fn victim_valid_cdf(&self) -> Option<Vec<(f64, f64)>> {
        let total: u64 = self.gc_victim_valid_hist.iter().sum();
        // `record_gc` bins each victim once (and `since` subtracts both alike).
        debug_assert_eq!(total, self.gc_victims, "histogram disagrees with the victim count");
        if total == 0 {
            return None;
        }
        let mut cumulative = 0u64;
        let cdf = self
            .gc_victim_valid_hist
            .iter()
            .enumerate()
            .map(|(i, n)| {
                cumulative += n;
                ((i + 1) as f64 / VALID_RATIO_BINS as f64, cumulative as f64 / total as f64)
            })
            .collect::<Vec<_>>();
        // Cumulative shares end at every victim.
        debug_assert_eq!(cdf.last().map(|(_, share)| *share), Some(1.0), "CDF short of 1");
        Some(cdf)
    }
}

#[derive(Debug, Default)]
pub(super) struct SpaceStats {
    counters: SpaceCounters,
    recent: VecDeque<GcRecord>,
}

impl SpaceStats {
    pub(super) fn record_issue(&mut self, purpose: WritePurpose, slots: u64) {
        // A reservation's slots, for a purpose the data zones take (`check_room`).
        debug_assert!(
            slots > 0
                && !matches!(
                    purpose,
                    WritePurpose::Wal | WritePurpose::Doublewrite | WritePurpose::Metadata
                ),
            "{slots} slots issued for {purpose:?}"
        );
        self.counters.issued_slots[purpose as usize] += slots;
    }

    /// Reserved slots given back unwritten ([`super::Space::give_back`]).
    pub(super) fn unissue(&mut self, purpose: WritePurpose, slots: u64) {
        let counted = &mut self.counters.issued_slots[purpose as usize];
        assert!(*counted >= slots, "{slots} {purpose:?} slots given back, {counted} issued");
        *counted -= slots;
    }

    pub(super) fn reclassify_issue(&mut self, from: WritePurpose, to: WritePurpose, slots: u64) {
        let counted = &mut self.counters.issued_slots[from as usize];
        assert!(*counted >= slots, "{slots} {from:?} slots to reclassify, {counted} issued");
        *counted -= slots;
        self.counters.issued_slots[to as usize] += slots;
    }

    /// A victim of `slots_per_zone` slots, `valid_slots` of them valid and `live_bytes` of its
    /// pages current, chosen at `clock`.
    pub(super) fn record_gc(
        &mut self,
        zone: ZoneId,
        valid_slots: u32,
        live_bytes: u64,
        slots_per_zone: u32,
        clock: u64,
    ) {
        assert!(valid_slots <= slots_per_zone);
        assert!(live_bytes <= u64::from(valid_slots) * super::map::SLOT_BYTES);
        self.counters.gc_victim_live_bytes += live_bytes;
        self.counters.gc_victims += 1;
        self.counters.gc_victim_valid_slots += u64::from(valid_slots);
        self.counters.gc_victim_slots += u64::from(slots_per_zone);
        let bin = (valid_slots as usize * VALID_RATIO_BINS / slots_per_zone as usize)
            .min(VALID_RATIO_BINS - 1);
        self.counters.gc_victim_valid_hist[bin] += 1;
        if self.recent.len() == RECENT_GC_MAX {
            self.recent.pop_front();
        }
        self.recent.push_back(GcRecord { zone, valid_slots, slots_per_zone, clock });
    }

    pub(super) fn counters(&self) -> SpaceCounters {
        // The kept records are the latest victims: never more than were counted.
        debug_assert!(
            self.recent.len() as u64 <= self.counters.gc_victims,
            "{} GC records of {} victims",
            self.recent.len(),
            self.counters.gc_victims
        );
        self.counters
    }

    #[cfg(test)]
    pub(super) fn recent(&self) -> impl Iterator<Item = &GcRecord> + '_ {
        // `record_gc` drops the oldest record at the bound.
        debug_assert!(self.recent.len() <= RECENT_GC_MAX, "{} GC records", self.recent.len());
        self.recent.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waf_and_victim_ratio_over_an_interval() {
        let mut s = SpaceStats::default();
        s.record_issue(WritePurpose::UserEviction, 100);
        let start = s.counters();
        s.record_issue(WritePurpose::UserEviction, 100);
        s.record_issue(WritePurpose::GcCopy, 300);
        s.record_gc(0, 3, 3 * 4096, 4, 10);
        s.record_gc(1, 1, 1000, 4, 20);
        let all = s.counters();
        assert_eq!(all.db_waf(), Some(2.5));
        let interval = all.since(&start);
        assert_eq!(interval.db_waf(), Some(4.0));
        assert_eq!(interval.mean_victim_valid_ratio(), Some(0.5));
        // Per page: 3 whole slots and 1000 bytes of 8 slots' bytes.
        assert_eq!(interval.mean_victim_live_ratio(), Some((3.0 * 4096.0 + 1000.0) / 32768.0));
        assert_eq!(SpaceCounters::default().db_waf(), None);
        // Victims at 3/4 and 1/4 valid: half the CDF by 0.25, all of it by 0.75.
        let cdf = interval.victim_valid_cdf().unwrap_or_default();
        assert_eq!(cdf.len(), VALID_RATIO_BINS);
        assert_eq!(cdf[4], (0.25, 0.0), "1/4 falls in the bin [0.25, 0.30)");
        assert_eq!(cdf[5], (0.30, 0.5));
        assert_eq!(cdf[15].1, 1.0);
        assert_eq!(SpaceCounters::default().victim_valid_cdf(), None);
    }

    #[test]
    fn gc_history_is_bounded() {
        let mut s = SpaceStats::default();
        for i in 0..(RECENT_GC_MAX as u64 + 10) {
            s.record_gc(0, 1, 4096, 4, i);
        }
        assert_eq!(s.recent().count(), RECENT_GC_MAX);
        assert_eq!(s.recent().next().map(|r| r.clock), Some(10));
        assert_eq!(s.counters().gc_victims, RECENT_GC_MAX as u64 + 10);
    }
}
