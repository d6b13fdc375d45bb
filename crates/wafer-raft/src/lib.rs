//! openraft's storage on Wafer: the Raft log ([`LogStore`]) and a replicated key-value state
//! machine ([`StateMachine`]), through openraft 0.9's `storage-v2` traits (`RaftLogStorage`,
//! `RaftStateMachine`).
//!
//! ```no_run
//! use wafer::{Db, Options};
//! # fn main() -> Result<(), wafer_raft::Error> {
//! // Entries and snapshots over 2 KiB are stored out of line: the database needs blobs.
//! let options = Options { file_capacity_bytes: 256 << 20, ..Options::production() }.with_blobs(2048);
//! let db = Db::open("/var/lib/node1/raft.db", options)?;
//! let (log_store, state_machine) = wafer_raft::open(db)?;
//! // openraft::Raft::new(id, config, network, log_store, state_machine).await
//! # Ok(()) }
//! ```
//!
//! With the `server` feature (on by default) the crate is also the replicated key-value
//! service `wafer raft serve` runs: [`server`] (HTTP between nodes and for clients, membership
//! changes, linearizable reads through the leader), [`client`] (follows the leader through
//! elections) and [`local`] (a cluster of `wafer raft serve` processes on loopback). Without it
//! (`default-features = false`) the crate is only the storage, with no HTTP dependencies.
//!
//! # Design
//!
//! Both stores live in Wafer trees, in one database or two (each takes its own `Db`; the names
//! do not collide). Every record but the snapshot bytes and the user's data is JSON.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `raft.log` | log index, 8 bytes big-endian (key order = index order) | the entry |
//! | `raft.log.meta` | `vote`, `purged`, `committed` | vote, last purged log id, committed log id |
//! | `raft.sm.meta` | `applied` | last applied log id, last membership, which data tree is live |
//! | `raft.sm.data.0`, `raft.sm.data.1` | the user's key | the user's value |
//! | `raft.snapshot` | `meta`, `data` | the current snapshot's meta and bytes |
//!
//! **Durability ordering.** Wafer has one write-ahead log per database, written in order, so
//! a synced batch makes every batch committed before it durable too. `append` writes its
//! entries in batches and syncs the last before it calls openraft's callback; `save_vote` and
//! `truncate` are synced; `purge` writes the purge point first, then deletes the entries
//! oldest first (not synced: a purge lost in a crash keeps only entries openraft no longer
//! needs; one half done is finished at open). `truncate` deletes newest first. Either way a
//! crash leaves a contiguous log.
//!
//! **Apply.** Each apply batch holds the entries' writes and the `applied` record (last
//! applied log id and membership) together, so a crash never leaves part of an entry applied
//! or a change without the log id that produced it. Applies are synced by default
//! ([`StateMachine::with_apply_durability`]).
//!
//! **Snapshots.** The format is in the private module `snapshot`: every pair of the
//! live data tree in key order, a pair count and a CRC-32C. A build takes a Wafer snapshot
//! (`Db::snapshot`) under the apply lock, so the view holds exactly the applied state it
//! records, and serialises the live tree from that view while applies go on. The built
//! snapshot is stored (synced) in
//! `raft.snapshot` before it is returned. An install checks the bytes first, writes the pairs
//! into the data tree not in use, then one synced batch switches the `applied` record to that
//! tree and stores the snapshot: the switch is atomic however large the snapshot, and the old
//! tree is emptied afterwards (or at the next open, after a crash).
//!
//! **Batches.** With a write-ahead log, every page a Wafer batch dirties stays in the buffer
//! pool until it commits, so large appends, applies, installs and deletes are split into
//! batches of at most an eighth of the pool. Each split point is a consistent state.
//!
//! **Limits.** Truncate and purge delete key by key (their keys are known; a purge is short);
//! emptying a data tree is one `Tree::clear`. The two data trees take turns instead of a fresh
//! tree per install. openraft 0.9 hands snapshots over as one in-memory
//! `Cursor<Vec<u8>>`, so a snapshot must fit in memory.

#[cfg(feature = "server")]
pub mod client;
mod error;
#[cfg(feature = "server")]
pub mod local;
mod log_store;
#[cfg(feature = "server")]
pub mod server;
mod snapshot;
mod state_machine;
mod trees;
mod types;

pub use error::{Error, Result};
pub use log_store::{LogReader, LogStore};
pub use state_machine::{KvReader, SnapshotBuilder, StateMachine};
pub use types::{Entry, Node, NodeId, Request, Response, TypeConfig};

/// The log store and the state machine, both kept in `db` (which needs a blob threshold).
pub fn open(db: Db) -> Result<(LogStore, StateMachine)> {
    Ok((LogStore::open(db.clone())?, StateMachine::open(db)?))
}

use wafer::Db;
