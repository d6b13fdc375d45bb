//! WAL counters: what was appended, what reached the device, and how well group commit groups.
//!
//! Device bytes are also counted by the device itself under `WritePurpose::Wal`; these counters
//! add what only the log knows (padding, group sizes, commits by durability).
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (inclusive) of the group-size histogram buckets: commits that one sync made
/// durable. Bucket 0 counts flushes no committer waited for (back-pressure, explicit flush).
pub const GROUP_SIZE_BUCKETS: [u64; 10] = [0, 1, 2, 4, 8, 16, 32, 64, 128, u64::MAX];

#[derive(Debug, Default)]
pub struct WalStats {
    records_appended: AtomicU64,
    payload_bytes_appended: AtomicU64,
    flushes: AtomicU64,
    syncs: AtomicU64,
    device_bytes_written: AtomicU64,
    padding_bytes: AtomicU64,
    header_writes: AtomicU64,
    commits_sync: AtomicU64,
    commits_group: AtomicU64,
    commits_none: AtomicU64,
    group_sizes: [AtomicU64; GROUP_SIZE_BUCKETS.len()],
}

/// A plain copy of [`WalStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct WalStatsSnapshot {
    pub records_appended: u64,
    pub payload_bytes_appended: u64,
    /// Log flushes (each one write batch followed by one sync).
    pub flushes: u64,
    /// Device syncs issued by the log (flushes and header writes).
    pub syncs: u64,
    /// Log and header block bytes written to the device.
    pub device_bytes_written: u64,
    /// Unused bytes of tail blocks closed by a flush (part of `device_bytes_written`).
    pub padding_bytes: u64,
    pub header_writes: u64,
    pub commits_sync: u64,
    pub commits_group: u64,
    pub commits_none: u64,
    /// Flushes by the number of waiting commits they made durable, see [`GROUP_SIZE_BUCKETS`].
    pub group_sizes: [u64; GROUP_SIZE_BUCKETS.len()],
}

impl WalStats {
    pub(crate) fn record_append(&self, payload_bytes: usize) {
        self.records_appended.fetch_add(1, Ordering::Relaxed);
        self.payload_bytes_appended.fetch_add(payload_bytes as u64, Ordering::Relaxed);
    }
    pub(crate) fn record_flush(&self, bytes: u64, padding_bytes: u64, group_size: u64) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.device_bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.padding_bytes.fetch_add(padding_bytes, Ordering::Relaxed);
        let bucket = GROUP_SIZE_BUCKETS.iter().position(|max| group_size <= *max);
        let bucket = bucket.unwrap_or(GROUP_SIZE_BUCKETS.len() - 1);
        self.group_sizes[bucket].fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn record_header_write(&self, bytes: u64) {
        self.header_writes.fetch_add(1, Ordering::Relaxed);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.device_bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }
    pub(crate) fn record_commit(&self, durability: super::Durability) {
        let counter = match durability {
            super::Durability::Sync => &self.commits_sync,
            super::Durability::GroupCommit { .. } => &self.commits_group,
            super::Durability::None => &self.commits_none,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
    pub fn snapshot(&self) -> WalStatsSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut group_sizes = [0u64; GROUP_SIZE_BUCKETS.len()];
        for (out, c) in group_sizes.iter_mut().zip(self.group_sizes.iter()) {
            *out = load(c);
        }
        WalStatsSnapshot {
            records_appended: load(&self.records_appended),
            payload_bytes_appended: load(&self.payload_bytes_appended),
            flushes: load(&self.flushes),
            syncs: load(&self.syncs),
            device_bytes_written: load(&self.device_bytes_written),
            padding_bytes: load(&self.padding_bytes),
            header_writes: load(&self.header_writes),
            commits_sync: load(&self.commits_sync),
            commits_group: load(&self.commits_group),
            commits_none: load(&self.commits_none),
            group_sizes,
        }
    }
}

impl WalStatsSnapshot {
    /// Mean waiting commits per flush that had any.
    pub fn mean_group_size(&self) -> Option<f64> {
        let commits = self.commits_sync + self.commits_group;
        let flushes: u64 = self.group_sizes[1..].iter().sum();
        (flushes > 0).then(|| commits as f64 / flushes as f64)
    }
}
