//! Device counters: a cheap snapshot, diffable so callers compute interval and cumulative WAF.
use serde::Serialize;

/// Number of buckets in the victim valid-ratio histogram (5% wide each; last one is 100%).
pub const VALID_RATIO_BUCKETS: usize = 21;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
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
    /// Host bytes written per stream / FDP handle / zone-less (index 0 when no placement).
    pub stream_host_bytes: Vec<u64>,
}
