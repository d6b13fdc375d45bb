//! openraft's log storage on Wafer: entries in one tree keyed by index, the vote and the purge
//! point in another.
use crate::error::{blocking, decode, encode, Error, Result};
use crate::trees::{self, LOG, LOG_META};
use crate::types::{Entry, NodeId, TypeConfig};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogId, LogState, RaftLogReader, StorageError, Vote};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use wafer::{Db, Durability, Tree, WriteBatch};

/// The Raft log of one node, in a Wafer database (alone, or beside the state machine's trees).
#[derive(Debug, Clone)]
pub struct LogStore {
    db: Db,
    log: Tree,
    meta: Tree,
}

/// Reads log entries while the store appends (openraft's replication tasks hold one each).
#[derive(Debug, Clone)]
pub struct LogReader {
    log: Tree,
}

impl LogStore {
    /// The log kept in `db`. The database must have been opened with a blob threshold
    /// (`Options::with_blobs`): entries over 2 KiB are stored out of line. Finishes a purge a
    /// crash interrupted.
    pub fn open(db: Db) -> Result<LogStore> {
        if db.options().blob_threshold_bytes.is_none() {
            return Err(Error::BlobsRequired);
        }
        let store = LogStore { log: db.tree(LOG)?, meta: db.tree(LOG_META)?, db };
        if let Some(purged) = store.read_meta::<LogId<NodeId>>(trees::PURGED_KEY, "purge point")? {
            store.delete_front(purged.index)?;
        }
        Ok(store)
    }

    fn read_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
        what: &'static str,
    ) -> Result<Option<T>> {
        match self.meta.get(key)? {
            Some(bytes) => Ok(Some(decode(what, &bytes)?)),
            None => Ok(None),
        }
    }

    fn write_meta<T: serde::Serialize>(
        &self,
        key: &[u8],
        what: &'static str,
        value: &T,
        durability: Durability,
    ) -> Result<()> {
        let bytes = encode(what, value)?;
        Ok(self.meta.put_with(key, &bytes, durability)?)
    }

    /// The index of the first (or, `back`, the last) entry present.
    fn end_index(&self, back: bool) -> Result<Option<u64>> {
        let mut iter = self.log.iter();
        let found = if back { iter.next_back() } else { iter.next() };
        match found {
            Some(kv) => Ok(Some(trees::log_index(&kv?.0)?)),
            None => Ok(None),
        }
    }

    /// Deletes every entry up to `upto` inclusive, oldest first, so a crash part-way leaves a
    /// contiguous log.
    fn delete_front(&self, upto: u64) -> Result<()> {
        let (Some(first), Some(last)) = (self.end_index(false)?, self.end_index(true)?) else {
            return Ok(());
        };
        let end = upto.min(last);
        if first > end {
            return Ok(());
        }
        let keys = (first..=end).map(|i| trees::log_key(i).to_vec());
        trees::delete_keys(&self.db, LOG, keys, Durability::None)
    }

    fn last_log_id(&self) -> Result<Option<LogId<NodeId>>> {
        match self.log.iter().next_back() {
            Some(kv) => Ok(Some(decode::<Entry>("log entry", &kv?.1)?.log_id)),
            None => Ok(None),
        }
    }

    fn log_state(&self) -> Result<LogState<TypeConfig>> {
        let purged: Option<LogId<NodeId>> = self.read_meta(trees::PURGED_KEY, "purge point")?;
        // Entries at or below the purge point may outlive it after a crash (the purge point is
        // written first); they never count as the last entry.
        let last = self.last_log_id()?.max(purged);
        Ok(LogState { last_purged_log_id: purged, last_log_id: last })
    }

    /// Writes `entries` in batches within the budget; the last batch is synced, which makes
    /// every earlier one durable too (one log, written in order).
    fn append_entries(&self, entries: Vec<Entry>) -> Result<()> {
        let budget = trees::batch_budget(&self.db);
        let mut batch = WriteBatch::new();
        let mut bytes = 0;
        for entry in &entries {
            let value = encode("log entry", entry)?;
            bytes += value.len() + trees::OP_OVERHEAD;
            batch.put(LOG, &trees::log_key(entry.log_id.index), &value);
            if bytes >= budget {
                self.db.write_with(&batch, Durability::None)?;
                batch = WriteBatch::new();
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            self.db.write_with(&batch, Durability::Sync)?;
        } else {
            self.db.sync()?;
        }
        Ok(())
    }

    /// Deletes the entries from `since` on, newest first, so a crash part-way leaves a
    /// contiguous log; durable when it returns, before any entry that replaces them.
    fn truncate_from(&self, since: u64) -> Result<()> {
        let Some(last) = self.end_index(true)? else {
            return Ok(());
        };
        if last < since {
            return Ok(());
        }
        let keys = (since..=last).rev().map(|i| trees::log_key(i).to_vec());
        trees::delete_keys(&self.db, LOG, keys, Durability::Sync)
    }

    fn purge_upto(&self, log_id: LogId<NodeId>) -> Result<()> {
        // The purge point goes first: entries it covers are dead from then on, whatever a crash
        // leaves of the deletes (open finishes them). Not synced: a purge lost in a crash only
        // keeps entries openraft no longer needs, and it purges again.
        self.write_meta(trees::PURGED_KEY, "purge point", &log_id, Durability::None)?;
        self.delete_front(log_id.index)
    }
}

/// Reads the entries whose indexes are in `range`, in index order.
fn read_entries(log: &Tree, range: (Bound<u64>, Bound<u64>)) -> Result<Vec<Entry>> {
    let start = match range.0 {
        Bound::Included(i) => i,
        Bound::Excluded(i) => match i.checked_add(1) {
            Some(i) => i,
            None => return Ok(Vec::new()),
        },
        Bound::Unbounded => 0,
    };
    let end: Bound<[u8; 8]> = match range.1 {
        Bound::Included(i) => Bound::Included(trees::log_key(i)),
        Bound::Excluded(i) => Bound::Excluded(trees::log_key(i)),
        Bound::Unbounded => Bound::Unbounded,
    };
    let empty = match range.1 {
        Bound::Included(i) => i < start,
        Bound::Excluded(i) => i <= start,
        Bound::Unbounded => false,
    };
    if empty {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for kv in log.range((Bound::Included(trees::log_key(start)), end)) {
        out.push(decode("log entry", &kv?.1)?);
    }
    Ok(out)
}

fn owned_range<RB: RangeBounds<u64>>(range: &RB) -> (Bound<u64>, Bound<u64>) {
    (range.start_bound().cloned(), range.end_bound().cloned())
}

fn read_logs_err(e: Error) -> StorageError<NodeId> {
    e.storage(ErrorSubject::Logs, ErrorVerb::Read)
}

fn write_logs_err(e: Error) -> StorageError<NodeId> {
    e.storage(ErrorSubject::Logs, ErrorVerb::Write)
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let (log, range) = (self.log.clone(), owned_range(&range));
        blocking(move || read_entries(&log, range)).await.map_err(read_logs_err)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let (log, range) = (self.log.clone(), owned_range(&range));
        blocking(move || read_entries(&log, range)).await.map_err(read_logs_err)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let store = self.clone();
        blocking(move || store.log_state()).await.map_err(read_logs_err)
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader { log: self.log.clone() }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let (store, vote) = (self.clone(), *vote);
        blocking(move || store.write_meta(trees::VOTE_KEY, "vote", &vote, Durability::Sync))
            .await
            .map_err(|e| e.storage(ErrorSubject::Vote, ErrorVerb::Write))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        let store = self.clone();
        blocking(move || store.read_meta(trees::VOTE_KEY, "vote"))
            .await
            .map_err(|e| e.storage(ErrorSubject::Vote, ErrorVerb::Read))
    }

    /// Not synced: the committed index only lets a restart re-apply sooner; losing it is safe.
    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let store = self.clone();
        blocking(move || {
            store.write_meta(trees::COMMITTED_KEY, "committed", &committed, Durability::None)
        })
        .await
        .map_err(|e| e.storage(ErrorSubject::Store, ErrorVerb::Write))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        let store = self.clone();
        let found = blocking(move || {
            store.read_meta::<Option<LogId<NodeId>>>(trees::COMMITTED_KEY, "committed")
        });
        Ok(found.await.map_err(|e| e.storage(ErrorSubject::Store, ErrorVerb::Read))?.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let (store, entries) = (self.clone(), entries.into_iter().collect::<Vec<_>>());
        blocking(move || store.append_entries(entries)).await.map_err(write_logs_err)?;
        // Synced above: the entries are durable when openraft hears so.
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let store = self.clone();
        blocking(move || store.truncate_from(log_id.index)).await.map_err(write_logs_err)
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let store = self.clone();
        blocking(move || store.purge_upto(log_id)).await.map_err(write_logs_err)
    }
}
