//! Durability: the WAL-backed [`PageLogger`](crate::page::PageLogger), the redo record format and
//! crash recovery (redo). Protocols and formats: docs/internals/recovery.md.
pub mod logger;
pub mod record;
pub mod redo;

pub use logger::WalLogger;
pub use record::{CommitBody, EngineState, ExtentOp};
pub use redo::{RecoveryStats, RedoCounts};
