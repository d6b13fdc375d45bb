//! What the runner drives: a key-value store behind a small trait, so the runner is tested
//! without the engine (on [`MemTarget`]) and the engine adapter ([`super::engine`]) is the only
//! code that knows `wafer::Db`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use crate::metrics::CounterSnapshot;

/// A failed operation on a target: which operation, and the store's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {message}")]
pub struct TargetError {
    pub op: &'static str,
    pub message: String,
}

impl TargetError {
    pub fn new(op: &'static str, message: impl std::fmt::Display) -> TargetError {
        TargetError { op, message: message.to_string() }
    }
}

/// A key-value store as YCSB sees it. Shared by every worker thread.
pub trait KvTarget: Send + Sync {
    /// Point read; Ok(true) when the key exists.
    fn read(&self, key: &[u8]) -> Result<bool, TargetError>;
    /// Overwrite an existing record (YCSB rewrites the whole value).
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError>;
    /// Insert a new record.
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError>;
    /// Insert new records as one atomic write (a `WriteBatch`, one transaction): the load's
    /// path when `RunSpec::load_batch` is above 1. One insert each by default, for stores
    /// without batches.
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        for (key, value) in records {
            self.insert(key, value)?;
        }
        Ok(())
    }
    /// Read up to `count` records in key order from `start` (inclusive); returns how many.
    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError>;
    /// Read, then overwrite. Stores with a cheaper combined path override this.
    fn read_modify_write(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.read(key)?;
        self.update(key, value)
    }
    /// Cumulative store-side counters now: bytes by purpose, flash counters, buffer pool hits.
    /// The runner fills `time_ns`, `ops` and the process fields itself.
    fn counters(&self) -> CounterSnapshot;
    /// Every byte the DB has written to the data device (WAL excluded), as in `counters()`.
    /// Workers check stop conditions with it every few operations, so targets with costly
    /// `counters()` (locks, syscalls) should answer this from atomics.
    fn db_issued_bytes(&self) -> u64 {
        self.counters().db_issued_bytes()
    }
    /// Device bytes the store has allocated for its data, if it knows (the engine's pages).
    fn allocated_bytes(&self) -> Option<u64> {
        None
    }
    /// Logical capacity of the data device: the unit of `--until Nx` and of the plots' x axis.
    fn data_device_capacity_bytes(&self) -> u64;
    /// Makes every write acknowledged so far durable by the engine's own call, without more
    /// (a lazy writer's periodic sync). None: the target has no such call.
    fn sync_committed(&self) -> Option<Result<(), TargetError>> {
        None
    }
    /// The store's configuration for the report (engine options, device, sizing).
    fn describe(&self) -> serde_json::Value;
    /// Called once after the final sample (so its writes are outside every figure): make the
    /// data durable, e.g. write back dirty pages and close the database, so a later run with
    /// `no_load` finds it. Nothing by default.
    fn close(&self) -> Result<(), TargetError> {
        Ok(())
    }
}

/// An in-memory target for tests: a BTreeMap. Its counters are plain: every key + value byte
/// written counts as a user byte, nothing else is written (DB WAF exactly 1), and no flash is
/// measured, so SSD and total WAF are null. That keeps `--until Nx` meaningful on it.
#[derive(Debug)]
pub struct MemTarget {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    capacity_bytes: u64,
    written_bytes: AtomicU64,
    read_bytes: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl MemTarget {
    /// `capacity_bytes` is the nominal device capacity `--until Nx` refers to.
    pub fn new(capacity_bytes: u64) -> MemTarget {
        assert!(capacity_bytes > 0, "a target needs a capacity");
        MemTarget {
            map: RwLock::new(BTreeMap::new()),
            capacity_bytes,
            written_bytes: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    fn put(&self, key: &[u8], value: &[u8]) {
        self.written_bytes.fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        self.map.write().unwrap_or_else(|e| e.into_inner()).insert(key.to_vec(), value.to_vec());
    }
}

impl KvTarget for MemTarget {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let found = map.get(key);
        // A hit is a key found, a miss one absent: the closest thing a map has to a buffer pool.
        match found {
            Some(v) => {
                self.read_bytes.fetch_add(v.len() as u64, Ordering::Relaxed);
                self.hits.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(found.is_some())
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put(key, value);
        Ok(())
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.put(key, value);
        Ok(())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        Ok(map.range(start.to_vec()..).take(count).count())
    }

    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot {
            user_bytes: self.written_bytes.load(Ordering::Relaxed),
            db_read_bytes: self.read_bytes.load(Ordering::Relaxed),
            buffer_hits: self.hits.load(Ordering::Relaxed),
            buffer_misses: self.misses.load(Ordering::Relaxed),
            flash_measured: false,
            ..CounterSnapshot::default()
        }
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "memory-btreemap", "capacity_bytes": self.capacity_bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_semantics_and_counters() {
        let t = MemTarget::new(1 << 20);
        assert!(!t.read(b"a").unwrap());
        t.insert(b"a", b"1234").unwrap();
        t.insert(b"c", b"5").unwrap();
        t.read_modify_write(b"b", b"xy").unwrap();
        assert!(t.read(b"a").unwrap());
        assert_eq!(t.scan(b"a", 10).unwrap(), 3);
        assert_eq!(t.scan(b"b", 1).unwrap(), 1);
        assert_eq!(t.scan(b"d", 10).unwrap(), 0);
        let c = t.counters();
        assert_eq!(c.user_bytes, 5 + 2 + 3);
        assert_eq!(c.db_issued_bytes(), c.user_bytes);
        assert!(!c.flash_measured);
        // Found: the read of `a`; absent: the first read of `a` and the read of `b` in the RMW.
        assert_eq!((c.buffer_hits, c.buffer_misses), (1, 2));
        assert_eq!(t.get(b"b"), Some(b"xy".to_vec()));
    }
}
