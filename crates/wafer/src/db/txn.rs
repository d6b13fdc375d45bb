//! Transactions: a private write set over the database, committed as one atomic batch.
//!
//! Isolation, precisely:
//! - Writes are buffered in the transaction and invisible to everyone else until `commit`,
//!   which applies them all as one [`WriteBatch`] (atomic and durable as the batch is; across
//!   any trees).
//! - Reads (`get`, `scan`) see the transaction's own writes over the committed state
//!   (read-your-writes), and otherwise the latest committed state (read committed).
//! - `lock(tree, key)` takes an exclusive lock on a key until commit or abort (strict 2PL). A
//!   transaction that locks every key it reads and then writes, and a guard key for every
//!   range it reads and then changes, is serializable with every other such transaction.
//!   Locks guard keys only against other transactions' `lock`: plain `Tree`/`Db::write`
//!   writers do not take them.
//! - A lock not granted within the transaction's lock timeout fails with
//!   [`Error::LockTimeout`]; the transaction keeps what it held and should be aborted (dropped)
//!   and retried. Dropping a transaction aborts it.
use super::batch::WriteBatch;
use super::bounds::prefix_end;
use super::inner::{check_key, Db};
use super::locks::{LockTable, TXN_LOCKS_MAX};
use crate::{CommitError, Durability, Error, ReadError, Result};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

/// Lock wait before [`Error::LockTimeout`], unless [`Txn::set_lock_timeout`] says otherwise.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(1);

/// Which way a [`Txn::scan`] walks its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ascending,
    Descending,
}

type Entry = (Vec<u8>, Vec<u8>);
/// One tree's writes: key -> Some(value) for a put, None for a delete.
type TreeWrites = BTreeMap<Vec<u8>, Option<Vec<u8>>>;
type WriteSet = HashMap<String, TreeWrites>;
/// This transaction's writes in a range, in scan order.
type MineIter<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)> + 'a>;

/// A transaction on a [`Db`] (see the module documentation for its isolation).
#[derive(Debug)]
pub struct Txn {
    db: Db,
    locks: Arc<LockTable>,
    owner: u64,
    held: Vec<(String, Vec<u8>)>,
    writes: WriteSet,
    lock_timeout: Duration,
}

impl Db {
    /// Starts a transaction. It holds no lock and reads committed state until it writes.
    pub fn begin(&self) -> Txn {
        let locks = self.inner.locks.clone();
        let owner = locks.new_owner();
        // The table's hand-over: an owner of its own, so no other transaction's locks are ours.
        debug_assert_ne!(owner, 0);
        Txn {
            db: self.clone(),
            locks,
            owner,
            held: Vec::new(),
            writes: HashMap::new(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }
}

impl Txn {
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        // Locks are taken under the owner the table handed out: 0 would share another's.
        debug_assert_ne!(self.owner, 0, "a transaction without a lock owner");
        self.lock_timeout = timeout;
    }

    /// Locks (`tree`, `key`) exclusively until commit or abort; a no-op when held already.
    pub fn lock(&mut self, tree: &str, key: &[u8]) -> Result<(), CommitError> {
        self.db.inner.check_open()?;
        check_key(key)?;
        if self.held.len() >= TXN_LOCKS_MAX {
            return Err(CommitError::TooManyLocks { max: TXN_LOCKS_MAX });
        }
        if self.locks.lock(self.owner, tree, key, self.lock_timeout)? {
            self.held.push((tree.to_string(), key.to_vec()));
        }
        // Granted only when not held (a second grant would be released twice at the end).
        debug_assert!(self.held.len() <= TXN_LOCKS_MAX);
        Ok(())
    }

    /// The value of `key`: this transaction's write if it wrote one, else the committed value.
    pub fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>, ReadError> {
        check_key(key)?;
        if let Some(w) = self.writes.get(tree).and_then(|t| t.get(key)) {
            // Buffered only by `put`/`delete`, which checked the name: commit will take it.
            debug_assert!(super::catalog::check_name(tree).is_ok(), "buffered under {tree:?}");
            return Ok(w.clone());
        }
        match self.db.existing_tree(tree)? {
            Some(t) => Ok(t.get(key)?),
            None => Ok(None),
        }
    }

    /// `lock` then `get`: the value, which no other locking transaction changes until this
    /// one ends.
    pub fn get_for_update(
        &mut self,
        tree: &str,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, CommitError> {
        self.lock(tree, key)?;
        // The value read below stays ours only while the lock is held until commit.
        debug_assert!(self.held.iter().any(|(t, k)| t == tree && k == key), "{tree} unlocked");
        Ok(self.get(tree, key).map_err(Error::from)?)
    }

    /// Buffers a put (sizes checked now, so commit refuses nothing for them).
    pub fn put(&mut self, tree: &str, key: &[u8], value: &[u8]) -> Result<(), CommitError> {
        super::catalog::check_name(tree)?;
        check_key(key)?;
        self.db.inner.check_value(value)?;
        // Commit applies buffered writes with the locks of this owner held.
        debug_assert_ne!(self.owner, 0, "a write buffered without a lock owner");
        self.writes.entry(tree.to_string()).or_default().insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    /// Buffers a delete.
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> Result<(), CommitError> {
        super::catalog::check_name(tree)?;
        check_key(key)?;
        // Commit applies buffered writes with the locks of this owner held.
        debug_assert_ne!(self.owner, 0, "a delete buffered without a lock owner");
        self.writes.entry(tree.to_string()).or_default().insert(key.to_vec(), None);
        Ok(())
    }

    /// Up to `limit` entries of `tree` with keys in `lo..hi`, in `direction`, this
    /// transaction's writes merged over the committed entries (its deletes hide them). A read:
    /// its errors are a [`ReadError`]'s.
    pub fn scan(
        &self,
        tree: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Entry>, ReadError> {
        let owned = |b: Bound<&[u8]>| b.map(|k| k.to_vec());
        let (lo, hi) = (owned(lo), owned(hi));
        let committed: Box<dyn Iterator<Item = Result<Entry, ReadError>>> =
            match self.db.existing_tree(tree)? {
                None => Box::new(std::iter::empty()),
                Some(t) => {
                    let it = t.range::<Vec<u8>, _>((lo.clone(), hi.clone()));
                    match direction {
                        Direction::Ascending => Box::new(it),
                        Direction::Descending => Box::new(it.rev()),
                    }
                }
            };
        let empty = BTreeMap::new();
        let mine = self.writes.get(tree).unwrap_or(&empty).range::<Vec<u8>, _>((lo, hi));
        let mine: MineIter<'_> = match direction {
            Direction::Ascending => Box::new(mine),
            Direction::Descending => Box::new(mine.rev()),
        };
        let out = merge(committed, mine, direction, limit);
        // The caller sized its page of results: merge hands back no more than it asked.
        debug_assert!(out.as_ref().is_ok_and(|v| v.len() <= limit) || out.is_err());
        out
    }

    /// As [`Txn::scan`] over the keys that start with `prefix`.
    pub fn scan_prefix(
        &self,
        tree: &str,
        prefix: &[u8],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Entry>, ReadError> {
        let end = prefix_end(prefix);
        // The scan's range is not inverted: its end lies above the prefix.
        debug_assert!(end.as_deref().is_none_or(|e| e > prefix));
        let hi = match &end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        self.scan(tree, Bound::Included(prefix), hi, direction, limit)
    }

    /// Whether the transaction has buffered no write.
    pub fn is_read_only(&self) -> bool {
        // `lock` refuses past the limit: a transaction never holds more.
        debug_assert!(self.held.len() <= TXN_LOCKS_MAX, "{} locks held", self.held.len());
        self.writes.values().all(|t| t.is_empty())
    }

    /// Applies every buffered write as one atomic batch (durable as the database's
    /// `options.durability` says), then releases the locks.
    pub fn commit(self) -> Result<(), CommitError> {
        // The batch is applied with this owner's locks held: an owner the table handed out.
        debug_assert_ne!(self.owner, 0, "a commit without a lock owner");
        let durability = self.db.inner.options.durability;
        self.commit_with(durability)
    }

    /// As [`Txn::commit`] with `durability` for the batch.
    pub fn commit_with(mut self, durability: Durability) -> Result<(), CommitError> {
        let mut batch = WriteBatch::new();
        let mut trees: Vec<(String, TreeWrites)> =
            std::mem::take(&mut self.writes).into_iter().collect();
        // A fixed order, so equal transactions log equal batches.
        trees.sort_by(|a, b| a.0.cmp(&b.0));
        for (tree, writes) in &trees {
            for (key, value) in writes {
                match value {
                    Some(v) => batch.put(tree, key, v),
                    None => batch.delete(tree, key),
                };
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        // Sorted trees of sorted keys, each once: a batch equal transactions log equally.
        debug_assert!(
            batch.ops.windows(2).all(|w| (w[0].tree(), w[0].key()) < (w[1].tree(), w[1].key())),
            "a transaction's batch in (tree, key) order"
        );
        // Locks go when `self` drops, after the batch is applied.
        self.db.write_with(&batch, durability)
    }

    /// Discards the buffered writes and releases the locks (as dropping does).
    pub fn abort(self) {
        // Dropping releases this owner's locks: at most the limit, all of them its own.
        debug_assert!(self.held.len() <= TXN_LOCKS_MAX, "{} locks held", self.held.len());
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        // `lock` pushes a key only on a fresh grant: each is released once, within the cap.
        debug_assert!(self.held.len() <= TXN_LOCKS_MAX, "{} locks held", self.held.len());
        self.locks.release(self.owner, &self.held);
    }
}

/// Merges the committed entries with the transaction's writes (which win on equal keys),
/// in `direction`, up to `limit` entries.
fn merge<'a>(
    committed: Box<dyn Iterator<Item = Result<Entry, ReadError>> + 'a>,
    mine: MineIter<'a>,
    direction: Direction,
    limit: usize,
) -> Result<Vec<Entry>, ReadError> {
    let mut committed = committed.peekable();
    let mut mine = mine.peekable();
    let mut out = Vec::new();
    // Each pass consumes at least one entry of one side; the loop ends with both sides or
    // at the limit.
    while out.len() < limit {
        let base_key = match committed.peek() {
            Some(Ok((k, _))) => Some(k.clone()),
            Some(Err(_)) => match committed.next() {
                Some(Err(e)) => return Err(e),
                other => unreachable!("peeked an error, next gave {:?}", other.map(|r| r.is_ok())),
            },
            None => None,
        };
        let take_mine = match (&base_key, mine.peek()) {
            (None, None) => break,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(b), Some((m, _))) => match direction {
                Direction::Ascending => m.as_slice() <= b.as_slice(),
                Direction::Descending => m.as_slice() >= b.as_slice(),
            },
        };
        if take_mine {
            let Some((k, v)) = mine.next() else { break };
            if base_key.as_deref() == Some(k.as_slice()) {
                committed.next(); // Shadowed by this transaction's write.
            }
            if let Some(v) = v {
                out.push((k.clone(), v.clone()));
            }
        } else if let Some(entry) = committed.next() {
            out.push(entry?);
        }
    }
    // Both sides came in `direction` and equal keys merged: the scan's keys are strict.
    debug_assert!(
        out.windows(2).all(|w| match direction {
            Direction::Ascending => w[0].0 < w[1].0,
            Direction::Descending => w[0].0 > w[1].0,
        }),
        "a transaction's scan out of order"
    );
    Ok(out)
}
