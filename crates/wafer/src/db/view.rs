//! What a snapshot holds (`At`): the epoch its reads descend through, the trees as they were,
//! and its pin on freed blobs. Apart from `snapshot.rs`, which builds it, because iterators over a
//! snapshot (`iter.rs`) keep one alive and the snapshot hands out iterators.
use super::inner::DbInner;
use crate::btree::{AtEpoch, TreeCore};
use crate::Result;
use std::collections::HashMap;
use std::sync::Arc;

/// What a snapshot holds: its epoch, the trees as they were, and its pin on freed blobs.
#[derive(Debug)]
pub(super) struct At {
    pub(super) db: Arc<DbInner>,
    pub(super) epoch: u64,
    pub(super) trees: HashMap<String, Arc<TreeCore>>,
    pub(super) blob_pin: Option<u64>,
}

impl Drop for At {
    fn drop(&mut self) {
        // The pin on freed blobs is released exactly when `Db::snapshot` took one (the blob space
        // is set at open, before any snapshot).
        debug_assert_eq!(self.blob_pin.is_some(), self.db.blobs.get().is_some());
        self.db.pool.versions().end(self.epoch);
        if let (Some(mark), Some(b)) = (self.blob_pin, self.db.blobs.get()) {
            b.lock_space().unpin(mark);
        }
    }
}

impl At {
    pub(super) fn nodes(&self) -> AtEpoch<'_> {
        // Epoch 0 means "no snapshot" to the page versions: reads would see the latest pages.
        debug_assert!(self.epoch > 0, "a snapshot view at epoch 0");
        AtEpoch { pool: &self.db.pool, epoch: self.epoch }
    }

    /// A stored value as the user's value: a blob read (the snapshot keeps it from reuse).
    pub(super) fn resolve(&self, stored: Vec<u8>) -> Result<Vec<u8>> {
        if self.db.blobs.get().is_none() {
            return Ok(stored);
        }
        // Freed blobs stay unused while a snapshot that may read them lives: its pin says so.
        debug_assert!(self.blob_pin.is_some(), "a snapshot of tagged values without a blob pin");
        match crate::blob::decode_stored(&stored) {
            Ok(crate::blob::Stored::Inline(v)) => Ok(v.to_vec()),
            Ok(crate::blob::Stored::Blob(r)) => {
                self.db.read_blob(&r)?.ok_or_else(|| crate::Corruption::SnapshotBlob.into())
            }
            Err(e) => Err(crate::Corruption::StoredValue(e).into()),
        }
    }
}
