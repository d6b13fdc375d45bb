//! Peers side by side: the same YCSB phases (load, A, B, C, F; zipf and uniform) against Wafer
//! and the engines a user would pick instead (RocksDB, LMDB, WiredTiger, PostgreSQL), with
//! value size, record count, cache, threads and durability matched and stated.
//!
//! ```text
//!  PeersConfig --> for each round, each engine (order rotated per round):
//!                    open in a fresh directory --> load --> A B C F (zipf) --> A B C F (uniform)
//!                    each phase: the runner's workers + host bytes from /proc/PID/io
//!                  --> rows (JSON), markdown table, bar charts
//! ```
//!
//! Every peer is driven through its C library (opened at run time, so the build needs none
//! installed) behind the runner's [`KvTarget`], in a worker process of its own (`wafer bench
//! peers-worker`; see `worker`); PostgreSQL runs as a server the worker starts, and its host
//! bytes are those of its whole process tree. Host bytes are what each process caused to be
//! read from or written to storage, so they include each engine's log, compaction,
//! checkpoints and background writeback, whatever its own counters call them.

mod config;
mod dl;
mod durability;
pub mod emu_device;
mod engine;
mod error;
mod fault;
pub mod harness;
mod lmdb;
mod peer;
mod phases;
mod postgres;
pub mod procio;
pub mod raw;
mod raw_row;
mod report;
mod rocksdb;
mod setup;
pub mod speed;
pub mod table;
mod wafer_peer;
mod watch;
mod wiredtiger;
pub mod worker;

#[cfg(test)]
mod tests;

pub use durability::Durability;
pub use emu_device::EmuDevice;
pub use engine::EngineKind;
pub use error::PeerError;
pub use harness::{run, PeerDevice, PeersConfig, PeersReport, Row, Scale, WriteVolume};
pub use peer::LAZY_SYNC_INTERVAL;
pub use setup::PeerSetup;

use peer::Peer;

// Opening dispatches to every engine's module, and some of them name the kind: so it sits here,
// above them, rather than beside the enum.
impl EngineKind {
    /// Opens the engine on `setup.dir` (created empty by the caller).
    pub(crate) fn open(&self, setup: &PeerSetup) -> Result<Box<dyn Peer>, PeerError> {
        Ok(match self {
            EngineKind::WaferInPlace
            | EngineKind::WaferOutOfPlace
            | EngineKind::WaferBest
            | EngineKind::WaferBlobs => Box::new(wafer_peer::WaferPeer::open(*self, setup)?),
            EngineKind::WaferRaw => match &setup.raw {
                Some(job) => Box::new(wafer_peer::WaferPeer::open_raw(job, setup)?),
                None => {
                    return Err(PeerError::Config(
                        "wafer-raw runs on an emulated SSD's served file only".into(),
                    ))
                }
            },
            EngineKind::RocksDb => Box::new(rocksdb::RocksPeer::open(setup, false)?),
            EngineKind::RocksDbBlob => Box::new(rocksdb::RocksPeer::open(setup, true)?),
            EngineKind::Lmdb => Box::new(lmdb::LmdbPeer::open(setup)?),
            EngineKind::WiredTiger => Box::new(wiredtiger::WtPeer::open(setup)?),
            EngineKind::Postgres => Box::new(postgres::PgPeer::open(setup)?),
        })
    }
}
