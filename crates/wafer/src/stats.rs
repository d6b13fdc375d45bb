//! I/O accounting by purpose, counted where each write is issued, never estimated afterwards,
//! and the statistics types `Db::stats` reports (their modules are the engine's own).
use crate::device::WritePurpose;

pub use crate::buffer::versions::SnapshotStats;
pub use crate::buffer::PoolStats;
pub use crate::durable::{RecoveryStats, RedoCounts};
pub use crate::oop::codec::CodecStats;
pub use crate::oop::OutOfPlaceStats;
pub use crate::pagestore::{LogicalBytes, StoreRecovery};
pub use crate::space::{GcRecord, SpaceCounters};
pub use crate::wal::WalStatsSnapshot;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shared, lock-free byte and I/O counters.
#[derive(Debug, Default)]
pub struct IoStats {
    write_bytes: [AtomicU64; WritePurpose::COUNT],
    write_ops: [AtomicU64; WritePurpose::COUNT],
    read_bytes: AtomicU64,
    read_ops: AtomicU64,
    syncs: AtomicU64,
    trim_bytes: AtomicU64,
}

/// A plain snapshot of [`IoStats`]; subtract two for an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct IoSnapshot {
    #[serde(serialize_with = "crate::device::serialize_by_purpose")]
    pub write_bytes: [u64; WritePurpose::COUNT],
    #[serde(serialize_with = "crate::device::serialize_by_purpose")]
    pub write_ops: [u64; WritePurpose::COUNT],
    pub read_bytes: u64,
    pub read_ops: u64,
    pub syncs: u64,
    pub trim_bytes: u64,
}

impl IoStats {
    pub fn record_write(&self, purpose: WritePurpose, bytes: u64) {
        self.write_bytes[purpose as usize].fetch_add(bytes, Ordering::Relaxed);
        self.write_ops[purpose as usize].fetch_add(1, Ordering::Relaxed);
    }
    pub fn record_read(&self, bytes: u64) {
        self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.read_ops.fetch_add(1, Ordering::Relaxed);
    }
    pub fn record_sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }
    pub fn record_trim(&self, bytes: u64) {
        self.trim_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    pub fn snapshot(&self) -> IoSnapshot {
        let mut s = IoSnapshot::default();
        for i in 0..WritePurpose::COUNT {
            s.write_bytes[i] = self.write_bytes[i].load(Ordering::Relaxed);
            s.write_ops[i] = self.write_ops[i].load(Ordering::Relaxed);
        }
        s.read_bytes = self.read_bytes.load(Ordering::Relaxed);
        s.read_ops = self.read_ops.load(Ordering::Relaxed);
        s.syncs = self.syncs.load(Ordering::Relaxed);
        s.trim_bytes = self.trim_bytes.load(Ordering::Relaxed);
        s
    }
}

impl IoSnapshot {
    pub fn bytes(&self, purpose: WritePurpose) -> u64 {
        self.write_bytes[purpose as usize]
    }
    /// User bytes: pages written back by eviction and checkpoints (uncompressed).
    /// Bytes the user's data took: pages written back and values written out of line.
    pub fn user_bytes(&self) -> u64 {
        self.bytes(WritePurpose::UserEviction)
            + self.bytes(WritePurpose::UserCheckpoint)
            + self.bytes(WritePurpose::Blob)
    }
    /// Every page byte the DB issued to the data device (WAL excluded, as in 000 sec. 7).
    pub fn db_issued_bytes(&self) -> u64 {
        WritePurpose::ALL.iter().filter(|p| **p != WritePurpose::Wal).map(|p| self.bytes(*p)).sum()
    }
    /// DB WAF = DB-issued page bytes / user bytes; None before any user write.
    pub fn db_waf(&self) -> Option<f64> {
        let user = self.user_bytes();
        (user > 0).then(|| self.db_issued_bytes() as f64 / user as f64)
    }
    /// The difference `self - earlier`, for interval figures.
    pub fn since(&self, earlier: &IoSnapshot) -> IoSnapshot {
        let mut d = *self;
        for i in 0..WritePurpose::COUNT {
            d.write_bytes[i] = self.write_bytes[i].saturating_sub(earlier.write_bytes[i]);
            d.write_ops[i] = self.write_ops[i].saturating_sub(earlier.write_ops[i]);
        }
        d.read_bytes = self.read_bytes.saturating_sub(earlier.read_bytes);
        d.read_ops = self.read_ops.saturating_sub(earlier.read_ops);
        d.syncs = self.syncs.saturating_sub(earlier.syncs);
        d.trim_bytes = self.trim_bytes.saturating_sub(earlier.trim_bytes);
        d
    }
}
