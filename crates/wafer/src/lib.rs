//! Wafer: an embedded key-value storage engine that writes to flash the way flash wants to be
//! written. See docs/design.md for formats, protocols and invariants.

pub mod alloc;
pub mod blob;
pub mod btree;
pub mod buffer;
pub mod db;
pub mod device;
pub mod dump;
pub mod durable;
pub mod error;
pub mod oop;
pub mod options;
pub mod page;
pub mod pagestore;
pub mod space;
pub mod stats;
mod wakeup;
pub mod wal;

#[doc(hidden)]
pub mod fuzzing;

pub use db::{BatchOp, Db, DbStats, Direction, Iter, Tree, Txn, WriteBatch};
pub use error::{Error, OpenError, Result};
pub use options::{CreateMode, Options, WriteMode};
pub use wal::Durability;

/// The README's code blocks, run by `cargo test --doc -p wafer` so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
#[derive(Debug)]
pub struct ReadmeDoctests;
