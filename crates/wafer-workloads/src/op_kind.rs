//! The kinds of operation a workload issues and a runner times.

/// Every operation kind a runner times: YCSB's five and the device-level ones of fio-like jobs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Delete,
    Write,
    Trim,
    Flush,
}

impl OpKind {
    pub const COUNT: usize = 9;
    pub const ALL: [OpKind; Self::COUNT] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
        OpKind::Delete,
        OpKind::Write,
        OpKind::Trim,
        OpKind::Flush,
    ];
    /// YCSB's operations, in the order of its proportions (read, update, insert, scan, rmw).
    pub const YCSB: [OpKind; 5] =
        [OpKind::Read, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];

    /// The name used as a JSON key.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read_modify_write",
            OpKind::Delete => "delete",
            OpKind::Write => "write",
            OpKind::Trim => "trim",
            OpKind::Flush => "flush",
        }
    }
}
