//! The operations a YCSB generator emits and the runner executes against the engine.

use super::key::Key;
use crate::op_kind::OpKind;
use crate::values::ValueSpec;

/// One operation. Values are described, not materialized (no allocation per operation):
/// the runner fills its own buffer with `ValueGenerator::fill(&spec, buf)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operation {
    /// Point read of one record.
    Read { key: Key },
    /// Overwrite an existing record.
    Update { key: Key, value: ValueSpec },
    /// Insert a new record. `keynum` must be acknowledged on the run's `InsertSequence`
    /// once the insert is done (so readers may then choose it).
    Insert { key: Key, keynum: u64, value: ValueSpec },
    /// Read `len` records in key order starting at `start` (inclusive).
    Scan { start: Key, len: u32 },
    /// Read the record, then overwrite it; timed as one operation (YCSB measures it whole).
    ReadModifyWrite { key: Key, value: ValueSpec },
}

impl Operation {
    pub fn kind(&self) -> OpKind {
        match self {
            Operation::Read { .. } => OpKind::Read,
            Operation::Update { .. } => OpKind::Update,
            Operation::Insert { .. } => OpKind::Insert,
            Operation::Scan { .. } => OpKind::Scan,
            Operation::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
        }
    }

    /// Bytes of user data this operation writes (key + value), for logical-bytes accounting.
    pub fn write_bytes(&self) -> u64 {
        match self {
            Operation::Update { key, value }
            | Operation::Insert { key, value, .. }
            | Operation::ReadModifyWrite { key, value } => {
                key.as_bytes().len() as u64 + u64::from(value.len_bytes)
            }
            Operation::Read { .. } | Operation::Scan { .. } => 0,
        }
    }
}
