//! `MOUNT/stats`: the device's counters while it serves, as a JSON document (schema
//! `flashemu-fuse/stats` v1), and their one-screen text form for `wafer emu stats`.

use flashemu::{Counters, LBA_BYTES};

pub const STATS_SCHEMA: &str = "flashemu-fuse/stats";
pub const STATS_VERSION: u32 = 1;

/// One snapshot of a served device.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub schema: String,
    pub version: u32,
    /// What the device is (preset name and overrides, as the server was given them).
    pub device: String,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    /// The device's counters as flashemu keeps them (host, flash by source, GC, erases).
    pub counters: Counters,
    /// Every byte programmed: host, GC copies, padding.
    pub flash_bytes: u64,
    /// flash_bytes / host write bytes; null before the first write.
    pub ssd_waf: Option<f64>,
    /// Mean valid fraction of GC victims; null before the first.
    pub gc_victim_valid_mean: Option<f64>,
    /// The device's GC unit (a superblock: one block on every die), the capability an engine
    /// aligns its zones to. Absent in documents of servers before it was reported.
    #[serde(default)]
    pub gc_unit_bytes: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("not a stats file: {0}")]
    Json(#[from] serde_json::Error),
    #[error("stats file is {found} v{version}, expected {STATS_SCHEMA} v{STATS_VERSION}")]
    Schema { found: String, version: u32 },
}

impl Stats {
    pub fn new(device: &str, logical_bytes: u64, physical_bytes: u64, c: &Counters) -> Stats {
        Stats {
            schema: STATS_SCHEMA.into(),
            version: STATS_VERSION,
            device: device.into(),
            logical_bytes,
            physical_bytes,
            counters: c.clone(),
            flash_bytes: c.flash_bytes(),
            ssd_waf: c.waf(),
            gc_victim_valid_mean: c.victim_valid_mean(),
            gc_unit_bytes: None,
        }
    }

    /// A served device's snapshot, its GC unit included.
    pub fn of_device(
        label: &str,
        device: &crate::BlockFile,
    ) -> Result<Stats, crate::BlockFileError> {
        let counters = device.counters()?;
        let (physical, unit) = device.with_ssd(|ssd| {
            let slots = u64::from(ssd.layout().slots_per_superblock);
            (ssd.physical_bytes(), slots * LBA_BYTES)
        })?;
        let mut stats = Stats::new(label, device.size_bytes(), physical, &counters);
        stats.gc_unit_bytes = Some(unit);
        Ok(stats)
    }

    pub fn to_json(&self) -> String {
        // A struct of numbers and strings always serializes.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses a stats file (user input: an error, never a panic).
    pub fn from_json(text: &str) -> Result<Stats, StatsError> {
        let stats: Stats = serde_json::from_str(text)?;
        if stats.schema != STATS_SCHEMA || stats.version != STATS_VERSION {
            return Err(StatsError::Schema { found: stats.schema, version: stats.version });
        }
        Ok(stats)
    }

    /// The text `wafer emu stats` prints.
    pub fn render(&self) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "-".into(), |x| format!("{x:.d$}"));
        let c = &self.counters;
        format!(
            "device           {}\n\
             capacity         {:.0} MiB logical, {:.0} MiB flash\n\
             host written     {:.1} MiB\n\
             host read        {:.1} MiB\n\
             host trimmed     {:.1} MiB\n\
             flash programmed {:.1} MiB (host {:.1}, GC {:.1}, padding {:.1})\n\
             SSD WAF          {}\n\
             GC               {} invocations, {} victims (mean valid {}), {:.1} MiB copied\n\
             block erases     {}\n",
            self.device,
            mib(self.logical_bytes),
            mib(self.physical_bytes),
            mib(c.host_write_bytes),
            mib(c.host_read_bytes),
            mib(c.host_trim_bytes),
            mib(self.flash_bytes),
            mib(c.flash_host_bytes),
            mib(c.flash_gc_bytes),
            mib(c.flash_pad_bytes),
            opt(self.ssd_waf, 3),
            c.gc_invocations,
            c.gc_victims,
            opt(self.gc_victim_valid_mean, 2),
            mib(c.gc_copied_blocks * LBA_BYTES),
            c.block_erases,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_documents() {
        let counters = Counters {
            host_write_bytes: 8192,
            flash_host_bytes: 8192,
            flash_gc_bytes: 4096,
            ..Counters::default()
        };
        let stats = Stats::new("tiny", 1 << 20, 2 << 20, &counters);
        assert_eq!(stats.ssd_waf, Some(1.5));
        assert_eq!(Stats::from_json(&stats.to_json()).expect("parse"), stats);
        assert!(stats.render().contains("SSD WAF          1.500"));
        assert!(matches!(Stats::from_json("{}"), Err(StatsError::Json(_))));
        let other = stats.to_json().replace(STATS_SCHEMA, "something-else");
        assert!(matches!(Stats::from_json(&other), Err(StatsError::Schema { .. })));
    }
}
