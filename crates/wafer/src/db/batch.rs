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
        let tree = match self {
            BatchOp::Put { tree, .. } | BatchOp::Delete { tree, .. } => tree,
        };
        // Names are checked at write, not here; a name too long for a key is refused there, and
        // none is long enough to wrap a length sum in `log_estimate_bytes`.
        debug_assert!(tree.len() < u32::MAX as usize, "a tree name of {} bytes", tree.len());
        tree
    }
    pub fn key(&self) -> &[u8] {
        let key = match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key, .. } => key,
        };
        // Keys are checked at write against MAX_KEY_BYTES; any longer is refused there, but
        // none wraps the payload sums computed before the check.
        debug_assert!(key.len() < u32::MAX as usize, "a key of {} bytes", key.len());
        key
    }
}

/// Operations applied in order, across any trees, invisible to readers until all are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub ops: Vec<BatchOp>,
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        let batch = WriteBatch::default();
        // A new batch allocates nothing: callers build many small ones on the write path.
        debug_assert_eq!(batch.ops.capacity(), 0);
        batch
    }
    pub fn put(&mut self, tree: &str, key: &[u8], value: &[u8]) -> &mut WriteBatch {
        self.ops.push(BatchOp::Put { tree: tree.into(), key: key.into(), value: value.into() });
        // The hand-over: the batch holds the caller's bytes, in order, as the last op.
        debug_assert!(matches!(self.ops.last(), Some(BatchOp::Put { tree: t, key: k, value: v })
            if t == tree && k == key && v == value));
        self
    }
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> &mut WriteBatch {
        self.ops.push(BatchOp::Delete { tree: tree.into(), key: key.into() });
        // The hand-over: the batch holds the caller's bytes, in order, as the last op.
        debug_assert!(matches!(self.ops.last(), Some(BatchOp::Delete { tree: t, key: k })
            if t == tree && k == key));
        self
    }
    pub fn len(&self) -> usize {
        debug_assert!(self.ops.len() <= self.ops.capacity());
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        let empty = self.ops.is_empty();
        // `Db::write` returns early for an empty batch: it must agree with `len`.
        debug_assert_eq!(empty, self.len() == 0);
        empty
    }
}
