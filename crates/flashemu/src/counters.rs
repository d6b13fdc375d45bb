//! Device counters: a cheap snapshot, diffable so callers compute interval and cumulative WAF.
use serde::Serialize;

/// Number of buckets in the victim valid-ratio histogram (5% wide each; last one is 100%).
pub const VALID_RATIO_BUCKETS: usize = 21;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct Counters {
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    pub host_trim_bytes: u64,
    /// Flash bytes programmed for host writes.
    pub flash_host_bytes: u64,
    /// Flash bytes programmed by GC copies.
    pub flash_gc_bytes: u64,
    /// Flash bytes programmed as padding (partial flash pages closed by a flush).
    pub flash_pad_bytes: u64,
    pub gc_copied_blocks: u64,
    pub gc_invocations: u64,
    /// Victim superblocks reclaimed.
    pub gc_victims: u64,
    /// Physical block erases (one superblock erase = its blocks).
    pub block_erases: u64,
    pub superblock_erases: u64,
    /// Histogram of victim valid ratios, bucket i = [5i%, 5(i+1)%).
    pub victim_valid_hist: [u64; VALID_RATIO_BUCKETS],
    /// Bytes the host sent with compressed writes (before compression; also in
    /// `host_write_bytes`).
    pub cw_raw_bytes: u64,
    /// What those chunks took after the device's compression (pass-through chunks at their
    /// raw size), before zone padding.
    pub cw_stored_bytes: u64,
    /// Chunks of compressed writes stored raw because compression did not shrink them.
    pub cw_passthrough_chunks: u64,
    /// Bytes returned to the host by decompressed reads (after decompression; also in
    /// `host_read_bytes`).
    pub dr_raw_bytes: u64,
    /// Host bytes written per stream / FDP handle / zone-less (index 0 when no placement).
    pub stream_host_bytes: Vec<u64>,
}

impl Counters {
    pub(crate) fn new(handles: usize) -> Counters {
        Counters { stream_host_bytes: vec![0; handles.max(1)], ..Counters::default() }
    }

    /// Every byte the flash programmed: host data, GC copies and padding.
    pub fn flash_bytes(&self) -> u64 {
        self.flash_host_bytes + self.flash_gc_bytes + self.flash_pad_bytes
    }

    /// Write amplification: flash bytes programmed / host bytes written. None before any host
    /// write. On a snapshot this is the cumulative WAF; on `later.since(&earlier)` it is the
    /// WAF of that interval.
    pub fn waf(&self) -> Option<f64> {
        if self.host_write_bytes == 0 {
            None
        } else {
            Some(self.flash_bytes() as f64 / self.host_write_bytes as f64)
        }
    }

    /// Flash bytes programmed / flash bytes programmed for host writes: WAF as 004's FEMU
    /// counts it (`(pages_from_host + pages_from_gc) / pages_from_host`). It leaves out what a
    /// write smaller than a mapped page adds (a 4 KiB write rewriting a 16 KiB page counts as
    /// one host page), which `waf` includes. None before any page is programmed for the host.
    pub fn programmed_waf(&self) -> Option<f64> {
        if self.flash_host_bytes == 0 {
            None
        } else {
            Some(self.flash_bytes() as f64 / self.flash_host_bytes as f64)
        }
    }

    /// The counts accumulated since `earlier` (a snapshot of the same device taken before).
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut hist = [0u64; VALID_RATIO_BUCKETS];
        for (i, bucket) in hist.iter_mut().enumerate() {
            *bucket = self.victim_valid_hist[i].saturating_sub(earlier.victim_valid_hist[i]);
        }
        let stream_host_bytes = self
            .stream_host_bytes
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                bytes.saturating_sub(earlier.stream_host_bytes.get(i).copied().unwrap_or(0))
            })
            .collect();
        Counters {
            host_write_bytes: self.host_write_bytes.saturating_sub(earlier.host_write_bytes),
            host_read_bytes: self.host_read_bytes.saturating_sub(earlier.host_read_bytes),
            host_trim_bytes: self.host_trim_bytes.saturating_sub(earlier.host_trim_bytes),
            flash_host_bytes: self.flash_host_bytes.saturating_sub(earlier.flash_host_bytes),
            flash_gc_bytes: self.flash_gc_bytes.saturating_sub(earlier.flash_gc_bytes),
            flash_pad_bytes: self.flash_pad_bytes.saturating_sub(earlier.flash_pad_bytes),
            gc_copied_blocks: self.gc_copied_blocks.saturating_sub(earlier.gc_copied_blocks),
            gc_invocations: self.gc_invocations.saturating_sub(earlier.gc_invocations),
            gc_victims: self.gc_victims.saturating_sub(earlier.gc_victims),
            block_erases: self.block_erases.saturating_sub(earlier.block_erases),
            superblock_erases: self.superblock_erases.saturating_sub(earlier.superblock_erases),
            victim_valid_hist: hist,
            cw_raw_bytes: self.cw_raw_bytes.saturating_sub(earlier.cw_raw_bytes),
            cw_stored_bytes: self.cw_stored_bytes.saturating_sub(earlier.cw_stored_bytes),
            cw_passthrough_chunks: self
                .cw_passthrough_chunks
                .saturating_sub(earlier.cw_passthrough_chunks),
            dr_raw_bytes: self.dr_raw_bytes.saturating_sub(earlier.dr_raw_bytes),
            stream_host_bytes,
        }
    }

    /// Mean valid fraction of GC victims, from the histogram's bucket midpoints (the last
    /// bucket is exactly 100%). None before the first victim.
    pub fn victim_valid_mean(&self) -> Option<f64> {
        let victims: u64 = self.victim_valid_hist.iter().sum();
        if victims == 0 {
            return None;
        }
        let weighted: f64 = self
            .victim_valid_hist
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let mid = if i + 1 == VALID_RATIO_BUCKETS { 1.0 } else { (i as f64 + 0.5) * 0.05 };
                mid * n as f64
            })
            .sum();
        Some(weighted / victims as f64)
    }

    pub(crate) fn record_victim(&mut self, valid: u32, slots: u32) {
        debug_assert!(valid <= slots && slots > 0);
        // Bucket i holds [5i%, 5(i+1)%); exactly 100% gets the last bucket.
        let bucket = (u64::from(valid) * 20 / u64::from(slots)) as usize;
        self.victim_valid_hist[bucket.min(VALID_RATIO_BUCKETS - 1)] += 1;
        self.gc_victims += 1;
    }
}
