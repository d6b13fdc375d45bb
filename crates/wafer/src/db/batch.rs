//! Atomic write batches: every operation applies, or (on a validation error) none does.
use crate::page::PAGE_SIZE;

/// Log bytes a batch may need in the worst case: its records twice over (puts that split log
/// images too) plus room for a few structure changes.
pub(super) fn log_estimate_bytes(payload_bytes: u64, ops: u64) -> u64 {
    // Payload comes with operations: bytes without one mean a caller miscounted its batch.
    debug_assert!(ops > 0 || payload_bytes == 0, "{payload_bytes} payload bytes in 0 ops");
    2 * (payload_bytes + 64 * ops) + (1 + ops / 4) * 5 * (PAGE_SIZE as u64 + 64)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    Put { tree: String, key: Vec<u8>, value: Vec<u8> },
    Delete { tree: String, key: Vec<u8> },
}

impl BatchOp {
    pub fn tree(&self) -> &str {
        match self {
            BatchOp::Put { tree, .. } | BatchOp::Delete { tree, .. } => tree,
        }
    }
    pub fn key(&self) -> &[u8] {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key, .. } => key,
        }
    }
}

/// Operations applied in order, across any trees, invisible to readers until all are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub ops: Vec<BatchOp>,
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }
    pub fn put(&mut self, tree: &str, key: &[u8], value: &[u8]) -> &mut WriteBatch {
        self.ops.push(BatchOp::Put { tree: tree.into(), key: key.into(), value: value.into() });
        self
    }
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> &mut WriteBatch {
        self.ops.push(BatchOp::Delete { tree: tree.into(), key: key.into() });
        self
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
