//! Wafer: an embedded key-value storage engine that writes to flash the way flash wants to be
//! written. See docs/design.md for formats, protocols and invariants.
//!
//! ```
//! use wafer::{Db, Options, WriteBatch};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("wafer-lib-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let options = Options { file_capacity_bytes: 64 << 20, ..Options::production() };
//! let db = Db::open(dir.join("app.db"), options)?; // and app.db.wal; both locked while open
//! let users = db.tree("users")?;
//! users.put(b"ada", b"engineer")?;
//! let mut batch = WriteBatch::new(); // atomic across trees
//! batch.put("users", b"grace", b"admiral").put("roles", b"admiral", b"grace");
//! db.write(&batch)?;
//! assert_eq!(users.get(b"grace")?.as_deref(), Some(&b"admiral"[..]));
//! println!("{}", db.stats().to_json()); // or prometheus_text(), or publish_metrics()
//! db.close()?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! More in `examples/` (`cargo run -p wafer --example quick_start`).

pub(crate) mod alloc;
pub(crate) mod blob;
pub(crate) mod btree;
pub(crate) mod buffer;
pub mod db;
pub mod device;
pub mod dump;
pub(crate) mod durable;
pub mod error;
pub(crate) mod le;
pub(crate) mod oop;
pub mod options;
pub(crate) mod page;
pub(crate) mod pagestore;
mod rng;
pub(crate) mod space;
pub mod stats;
mod varint;
mod wakeup;
pub(crate) mod wal;

#[doc(hidden)]
pub mod fuzzing;

/// What the workspace's benchmarks, experiments and integration tests reach beneath the API:
/// the out-of-place layout and store, page formats, the WAL on its own, GC's histogram bins.
/// Not a stable interface: an application needs only the crate root, `options`, `stats`,
/// `device` and `error`.
pub mod internals {
    /// The out-of-place store's layout, codecs and recovered map.
    pub mod oop {
        pub use crate::oop::codec;
        pub use crate::oop::{metadata_device_bytes, Layout, OutOfPlaceStore};
    }
    /// Page formats: node limits, the meta page, the change logger the B-tree calls.
    pub mod page {
        pub use crate::page::PAGE_SIZE;
        pub use crate::page::{lsn, meta, node, verify, write_history, PageChange, PageLogger};
    }
    /// The space manager's GC histogram bins, which reports copy bin for bin.
    pub mod space {
        pub use crate::space::VALID_RATIO_BINS;
    }
    /// The write-ahead log on its own device.
    pub mod wal {
        pub use crate::wal::{Wal, WalError, WalOptions, WalStatsSnapshot, GROUP_SIZE_BUCKETS};
    }
}

pub use db::{
    BatchOp, Db, DbStats, Direction, Iter, Snapshot, SnapshotTree, Tree, Txn, WriteBatch,
};
pub use error::{
    CheckError, CommitError, Corruption, DbOpenError, Error, Limit, MaintenanceError, OpenError,
    OptionsError, OutOfSpaceError, ReadError, RedoFailure, Result, StorageError,
};
pub use options::{CreateMode, Options, WriteMode};
pub use wal::Durability;

/// The README's code blocks, run by `cargo test --doc -p wafer` so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
#[derive(Debug)]
pub struct ReadmeDoctests;
