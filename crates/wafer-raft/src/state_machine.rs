//! openraft's state machine on Wafer: a key-value map whose every change commits in one batch
//! with the applied state that covers it.
use crate::error::{blocking, decode, encode, Error, Result};
use crate::snapshot;
use crate::trees::{self, data_tree, SM_META, SNAPSHOT};
use crate::types::{Entry, Node, NodeId, Request, Response, TypeConfig};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StoredMembership,
};
use std::io::Cursor;
use std::sync::{Arc, Mutex, MutexGuard};
use wafer::{Db, Durability, WriteBatch};

/// What the state machine has applied, stored as one record so it changes atomically with
/// the data it describes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Applied {
    pub(crate) last_applied: Option<LogId<NodeId>>,
    pub(crate) membership: StoredMembership<NodeId, Node>,
    /// Which data tree (0 or 1) holds the map.
    pub(crate) generation: u8,
}

/// The applied state, cached; its mutex is also the apply lock that snapshot builds and
/// installs take, so neither sees half of an apply.
type Shared = Arc<Mutex<Applied>>;

fn lock(state: &Shared) -> MutexGuard<'_, Applied> {
    // A panic while holding the lock leaves the cache as it was before that apply's batch
    // committed or after it: each is a state the database held.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The replicated key-value map of one node.
#[derive(Debug, Clone)]
pub struct StateMachine {
    db: Db,
    state: Shared,
    apply_durability: Durability,
}

/// Builds a snapshot of the map (openraft runs it in a task of its own).
#[derive(Debug, Clone)]
pub struct SnapshotBuilder {
    db: Db,
    state: Shared,
}

/// Reads the map while openraft owns the state machine (the service's reads).
#[derive(Debug, Clone)]
pub struct KvReader {
    db: Db,
    state: Shared,
}

impl StateMachine {
    /// The state machine kept in `db` (opened with a blob threshold: values and snapshots over
    /// 2 KiB are stored out of line). Empties the data tree not in use, which an install a crash
    /// interrupted may have left half-written.
    pub fn open(db: Db) -> Result<StateMachine> {
        if db.options().blob_threshold_bytes.is_none() {
            return Err(Error::BlobsRequired);
        }
        let applied = match db.tree(SM_META)?.get(trees::APPLIED_KEY)? {
            Some(bytes) => decode("applied state", &bytes)?,
            None => Applied::default(),
        };
        trees::clear_tree(&db, data_tree(1 - applied.generation))?;
        let state = Arc::new(Mutex::new(applied));
        Ok(StateMachine { db, state, apply_durability: Durability::Sync })
    }

    /// How long each apply waits for the log (default `Sync`: the state is durable when
    /// `apply` returns, as openraft expects of a state machine that persists itself). `None`
    /// is safe only when the log store saves the committed index and keeps the entries since
    /// the last snapshot, so a restart re-applies what a crash lost.
    pub fn with_apply_durability(mut self, durability: Durability) -> StateMachine {
        self.apply_durability = durability;
        self
    }

    /// A handle for reads of the map.
    pub fn reader(&self) -> KvReader {
        KvReader { db: self.db.clone(), state: self.state.clone() }
    }

    /// Commits `batch` together with `next`, the applied state it leads to.
    fn commit(&self, batch: &mut WriteBatch, next: &Applied) -> Result<()> {
        batch.put(SM_META, trees::APPLIED_KEY, &encode("applied state", next)?);
        self.db.write_with(batch, self.apply_durability)?;
        *batch = WriteBatch::new();
        Ok(())
    }

    /// Applies `entries` in batches within the budget; each batch carries the applied state up
    /// to its last entry, so a crash leaves some prefix applied, never part of an entry.
    fn apply_entries(&self, entries: Vec<Entry>) -> Result<Vec<Response>> {
        let budget = trees::batch_budget(&self.db);
        let mut state = lock(&self.state);
        let mut next = state.clone();
        let data = data_tree(next.generation);
        let (mut batch, mut bytes, mut pending) = (WriteBatch::new(), 0, false);
        let mut responses = Vec::with_capacity(entries.len());
        for entry in entries {
            next.last_applied = Some(entry.log_id);
            pending = true;
            let response = match entry.payload {
                EntryPayload::Blank => Response::Done,
                EntryPayload::Normal(request) => stage(&mut batch, &mut bytes, data, request),
                EntryPayload::Membership(m) => {
                    next.membership = StoredMembership::new(Some(entry.log_id), m);
                    Response::Done
                }
            };
            responses.push(response);
            if bytes >= budget {
                self.commit(&mut batch, &next)?;
                (*state, bytes, pending) = (next.clone(), 0, false);
            }
        }
        if pending {
            self.commit(&mut batch, &next)?;
            *state = next;
        }
        Ok(responses)
    }

    fn current_snapshot(&self) -> Result<Option<Snapshot<TypeConfig>>> {
        // Under the lock: meta and data are read as one install or build left them.
        let _state = lock(&self.state);
        let tree = self.db.tree(SNAPSHOT)?;
        let (Some(meta), Some(data)) =
            (tree.get(trees::SNAPSHOT_META_KEY)?, tree.get(trees::SNAPSHOT_DATA_KEY)?)
        else {
            return Ok(None);
        };
        let meta = decode("snapshot meta", &meta)?;
        Ok(Some(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }))
    }
}

/// Adds `request` to `batch`. A key the engine would refuse is rejected here, the same way on
/// every node, instead of failing the batch (which would stop the node).
fn stage(batch: &mut WriteBatch, bytes: &mut usize, data: &str, request: Request) -> Response {
    let key = request.key();
    if key.len() > wafer::options::MAX_KEY_BYTES {
        let max = wafer::options::MAX_KEY_BYTES;
        return Response::Rejected(format!("key of {} bytes exceeds {max}", key.len()));
    }
    match &request {
        Request::Put { key, value } => {
            *bytes += key.len() + value.len() + trees::OP_OVERHEAD;
            batch.put(data, key.as_bytes(), value.as_bytes());
        }
        Request::Delete { key } => {
            *bytes += key.len() + trees::OP_OVERHEAD;
            batch.delete(data, key.as_bytes());
        }
    }
    Response::Done
}

/// Stores `meta` and `data` as the current snapshot, replacing the previous one, in the batch
/// given (synced by the caller's write).
fn stage_snapshot(
    batch: &mut WriteBatch,
    meta: &SnapshotMeta<NodeId, Node>,
    data: &[u8],
) -> Result<()> {
    batch.put(SNAPSHOT, trees::SNAPSHOT_META_KEY, &encode("snapshot meta", meta)?);
    batch.put(SNAPSHOT, trees::SNAPSHOT_DATA_KEY, data);
    Ok(())
}

fn snapshot_id(last: Option<&LogId<NodeId>>) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match last {
        Some(id) => format!("{}-{}-{}-{nanos}", id.leader_id.term, id.leader_id.node_id, id.index),
        None => format!("none-{nanos}"),
    }
}

impl SnapshotBuilder {
    /// Serialises the map from a Wafer snapshot taken under the apply lock (applies go on
    /// during the scan), and stores the result as the current snapshot unless an install
    /// replaced the map meanwhile, so an install is never overwritten by an older build.
    fn build(&self) -> Result<Snapshot<TypeConfig>> {
        // A Wafer snapshot taken under the apply lock holds exactly the applied state: the
        // scan then runs while applies go on.
        let (state, view) = {
            let state = lock(&self.state);
            (state.clone(), self.db.snapshot()?)
        };
        let mut writer = snapshot::Writer::new();
        for kv in view.tree(data_tree(state.generation)).iter() {
            let (key, value) = kv?;
            writer.push(&key, &value);
        }
        drop(view);
        let data = writer.finish();
        let meta = SnapshotMeta {
            last_log_id: state.last_applied,
            last_membership: state.membership.clone(),
            snapshot_id: snapshot_id(state.last_applied.as_ref()),
        };
        let mut batch = WriteBatch::new();
        stage_snapshot(&mut batch, &meta, &data)?;
        let now = lock(&self.state);
        // An install since the scan stored a newer snapshot: this one is not kept over it.
        if now.generation == state.generation {
            // Synced: openraft purges the log up to this snapshot once it returns.
            self.db.write_with(&batch, Durability::Sync)?;
        }
        drop(now);
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}

impl StateMachine {
    /// Replaces the map with the snapshot's: its pairs go into the data tree not in use, then
    /// one synced batch switches to that tree and stores the applied state and the snapshot.
    /// A crash before the switch leaves the old map whole; after it, the new one.
    fn install(&self, meta: SnapshotMeta<NodeId, Node>, data: Vec<u8>) -> Result<()> {
        let pairs = snapshot::parse(&data)?;
        let mut state = lock(&self.state);
        let target = 1 - state.generation;
        let tree = data_tree(target);
        trees::clear_tree(&self.db, tree)?;
        let budget = trees::batch_budget(&self.db);
        let (mut batch, mut bytes) = (WriteBatch::new(), 0);
        for (key, value) in pairs {
            bytes += key.len() + value.len() + trees::OP_OVERHEAD;
            batch.put(tree, key, value);
            if bytes >= budget {
                self.db.write_with(&batch, Durability::None)?;
                (batch, bytes) = (WriteBatch::new(), 0);
            }
        }
        let next = Applied {
            last_applied: meta.last_log_id,
            membership: meta.last_membership.clone(),
            generation: target,
        };
        stage_snapshot(&mut batch, &meta, &data)?;
        batch.put(SM_META, trees::APPLIED_KEY, &encode("applied state", &next)?);
        self.db.write_with(&batch, Durability::Sync)?;
        let old = data_tree(std::mem::replace(&mut *state, next).generation);
        trees::clear_tree(&self.db, old)
    }
}

impl KvReader {
    /// The value of `key` as last applied on this node (linearizable only after the caller
    /// has confirmed leadership, e.g. with `Raft::ensure_linearizable`).
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        // Under the lock: an install must not empty the tree this read is looking at.
        let state = lock(&self.state);
        Ok(self.db.tree(data_tree(state.generation))?.get(key.as_bytes())?)
    }

    /// Every pair whose key starts with `prefix`, in key order, up to `limit` pairs.
    pub fn scan(&self, prefix: &str, limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let state = lock(&self.state);
        let tree = self.db.tree(data_tree(state.generation))?;
        let pairs = tree.prefix(prefix.as_bytes()).take(limit);
        Ok(pairs.collect::<std::result::Result<_, wafer::ReadError>>()?)
    }

    /// Every pair with `start <= key < end` (no `end`: to the last key), in key order, up to
    /// `limit` pairs.
    pub fn scan_range(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        use std::ops::Bound;
        let state = lock(&self.state);
        let tree = self.db.tree(data_tree(state.generation))?;
        let hi = end.map_or(Bound::Unbounded, |e| Bound::Excluded(e.as_bytes()));
        let pairs = tree.range::<&[u8], _>((Bound::Included(start.as_bytes()), hi)).take(limit);
        Ok(pairs.collect::<std::result::Result<_, wafer::ReadError>>()?)
    }
}

fn sm_err(verb: ErrorVerb) -> impl FnOnce(Error) -> StorageError<NodeId> {
    move |e| e.storage(ErrorSubject::StateMachine, verb)
}

fn snapshot_err(verb: ErrorVerb) -> impl FnOnce(Error) -> StorageError<NodeId> {
    move |e| e.storage(ErrorSubject::Snapshot(None), verb)
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let builder = self.clone();
        blocking(move || builder.build()).await.map_err(snapshot_err(ErrorVerb::Write))
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Node>), StorageError<NodeId>> {
        let state = lock(&self.state);
        Ok((state.last_applied, state.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let (sm, entries) = (self.clone(), entries.into_iter().collect::<Vec<_>>());
        blocking(move || sm.apply_entries(entries)).await.map_err(sm_err(ErrorVerb::Write))
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder { db: self.db.clone(), state: self.state.clone() }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let (sm, meta, data) = (self.clone(), meta.clone(), snapshot.into_inner());
        blocking(move || sm.install(meta, data)).await.map_err(snapshot_err(ErrorVerb::Write))
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let sm = self.clone();
        blocking(move || sm.current_snapshot()).await.map_err(snapshot_err(ErrorVerb::Read))
    }
}
