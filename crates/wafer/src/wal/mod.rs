//! The write-ahead log: a redo log on its own device, with group commit and crash recovery.
//!
//! - [`Wal::create`] formats a device; [`Wal::open`] returns a [`WalRecovery`] that yields the
//!   records from the log start (or [`Wal::open_from`] a checkpoint's LSN) and, once drained,
//!   [`WalRecovery::finish`] hands back the [`Wal`] that appends after the last valid record.
//! - [`Wal::append`] frames a record into the in-memory buffer and returns its [`Lsn`] (the
//!   engine stores it as the page LSN); [`Wal::commit`] makes it durable per [`Durability`].
//! - [`Wal::truncate_before`] frees the log before a checkpoint's LSN.
//!
//! Formats, the group commit protocol and the torn-tail-versus-corruption rule are in docs/internals/wal.md
//! beside this file.
use crate::device::DeviceError;
use std::time::Duration;
use thiserror::Error;

pub(crate) mod format;
mod reader;
mod stats;
mod writer;

#[cfg(test)]
mod crash_device;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod tests;

pub use reader::{RecoveryReport, WalRecovery};
pub use stats::{WalStatsSnapshot, GROUP_SIZE_BUCKETS};
pub use writer::{BeforeWrite, Wal};

/// A position in the log stream: `block_index * 4096 + offset_in_block`, counting log blocks
/// from the first ever written. Monotonic across laps of the circular area, never reused.
/// A record's LSN is the position of its header; 0 is never a record's LSN ("no LSN").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
#[serde(transparent)]
pub struct Lsn(pub u64);

impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How long [`Wal::commit`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Returns once the record is durable (written and synced). Concurrent committers share one
    /// sync: whoever finds no flush in progress leads the next one for everybody waiting.
    Sync,
    /// As `Sync`, but the leader first waits up to `max_delay` (or until
    /// [`WalOptions::group_commit_bytes`] are buffered, or a `Sync` committer arrives) so that
    /// more committers share its sync.
    GroupCommit { max_delay: Duration },
    /// Returns at once. The record becomes durable with the next flush: any later `Sync` or
    /// group commit, a full buffer, or [`Wal::flush`] (which an engine's background worker calls).
    None,
}

/// A record read back by recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    pub lsn: Lsn,
    /// Record kind, defined by the engine (opaque to the log).
    pub kind: u8,
    pub payload: Vec<u8>,
}

/// WAL configuration, a value with named presets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// In-memory log buffer in 4 KiB blocks: the most one flush writes. Appends wait (flush)
    /// when it is full; the largest record is about `buffer_blocks - 2` blocks.
    pub buffer_blocks: u32,
    /// A gathering group-commit leader stops waiting once this many bytes are buffered.
    pub group_commit_bytes: u64,
    /// A gathering leader also stops once this many committers wait (0: no such limit).
    pub group_commit_max_waiters: u32,
    /// Trim (discard) log blocks that hold nothing live: the whole area at create, the freed
    /// blocks at truncation, so a flash device knows they are dead. Off for a log file that
    /// should stay allocated (no extent allocation on the commit path).
    pub trim: bool,
    /// Blocks recovery reads past the first bad block to tell a torn tail from corruption (at
    /// least twice the largest flush ever written is always read, whatever this says).
    pub recovery_lookahead_blocks: u32,
    /// What the log's writes count as. `Wal` for the engine's log on its own device (kept out
    /// of the WAF figures); `Metadata` for a log that lives on the data device (the
    /// out-of-place map journal), whose bytes the flash programs like any other DB-issued byte.
    pub purpose: crate::device::WritePurpose,
}

impl WalOptions {
    /// Defaults for real devices: a 1 MiB buffer, groups cut at 256 KiB.
    pub fn production() -> WalOptions {
        WalOptions {
            buffer_blocks: 256,
            group_commit_bytes: 256 << 10,
            group_commit_max_waiters: 0,
            trim: true,
            recovery_lookahead_blocks: 2048,
            purpose: crate::device::WritePurpose::Wal,
        }
    }
    /// Tiny buffer so tests hit back-pressure, spanning records and wraparound quickly.
    pub fn test_min() -> WalOptions {
        WalOptions {
            buffer_blocks: 4,
            group_commit_bytes: 8 << 10,
            group_commit_max_waiters: 0,
            trim: true,
            recovery_lookahead_blocks: 16,
            purpose: crate::device::WritePurpose::Wal,
        }
    }
    pub fn validate(&self) -> Result<(), WalError> {
        if !(4..=1 << 16).contains(&self.buffer_blocks) {
            return Err(WalError::InvalidOptions {
                field: "buffer_blocks",
                value: u64::from(self.buffer_blocks),
                limit: crate::Limit::Within { min: 4, max: 1 << 16 },
            });
        }
        Ok(())
    }
    /// Largest payload [`Wal::append`] accepts with these options.
    pub fn max_payload_bytes(&self) -> usize {
        // From any position in the tail block the record then needs at most buffer_blocks - 1
        // new blocks, so an emptied buffer always has room for it (with either header).
        (self.buffer_blocks as usize - 2) * format::BLOCK_DATA_BYTES
            - format::WIDE_RECORD_HEADER_BYTES
    }
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions::production()
    }
}

/// Every way the log can fail, each with its own variant so callers can react precisely.
#[derive(Debug, Error)]
pub enum WalError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// Both header blocks are empty: the device was never formatted as a WAL.
    #[error("no WAL on this device: both header blocks are empty")]
    Missing,
    #[error("not a WAL: the header blocks do not carry the WAL magic")]
    BadMagic,
    #[error("WAL header is corrupt: no header copy passes its checksum")]
    CorruptHeader,
    #[error("WAL format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion { found: u32, supported: u32 },
    /// The device is shorter than the log area its header describes.
    #[error(
        "WAL device is truncated: its header needs {expected_bytes} bytes, it has {actual_bytes}"
    )]
    Truncated { expected_bytes: u64, actual_bytes: u64 },
    /// Damage inside the durable part of the log (never a torn tail, which is cut silently).
    #[error("corrupt WAL at lsn {lsn}: {reason}")]
    CorruptRecord { lsn: Lsn, reason: String },
    /// The circular area has no room until a checkpoint truncates the log.
    #[error("WAL is full: {needed_bytes} more bytes do not fit before the log start {start_lsn}; checkpoint and truncate")]
    LogFull { needed_bytes: u64, start_lsn: Lsn },
    #[error("record payload of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge { len: usize, max: usize },
    #[error("lsn {lsn} is outside the log ({start}..{end}): {reason}")]
    BadLsn { lsn: Lsn, start: Lsn, end: Lsn, reason: &'static str },
    #[error("WAL device too small: {capacity_bytes} bytes, at least {min_bytes} needed")]
    DeviceTooSmall { capacity_bytes: u64, min_bytes: u64 },
    /// WAL option `field` holds `value`, outside `limit`.
    #[error("invalid WAL option `{field}`: {value} must be {limit}")]
    InvalidOptions { field: &'static str, value: u64, limit: crate::Limit },
    /// An earlier write or sync failed; what reached the device is unknown, so the log refuses
    /// further work until reopened (recovery then finds the truth).
    #[error("WAL is poisoned by an earlier I/O error; reopen to recover")]
    Poisoned,
}
