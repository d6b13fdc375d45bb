//! Wafer: an embedded key-value storage engine that writes to flash the way flash wants to be
//! written. See docs/design.md for formats, protocols and invariants.

pub mod device;
pub mod error;
pub mod space;
pub mod stats;
pub mod wal;

pub use error::{Error, Result};
