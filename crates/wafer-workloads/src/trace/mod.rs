//! Block traces: parsers for fio iolog (v2, v3) and the MQSim / DiskSim ASCII format. The
//! replayer that drives the emulator with them is `wafer_harness::jobs::replay`.
pub mod fio;
pub mod mqsim;
pub mod reader;

pub use reader::{TraceFormat, TraceReader};

/// A malformed trace: the line number (1-based) and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("trace line {line}: {reason}")]
    Line { line: u64, reason: String },
    #[error("trace: {0}")]
    Io(#[from] std::io::Error),
    #[error("trace: {0}")]
    Format(String),
}

impl TraceError {
    pub fn line(line: u64, reason: impl Into<String>) -> TraceError {
        TraceError::Line { line, reason: reason.into() }
    }
}

/// What a trace record asks the device to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceOp {
    Write,
    Read,
    Trim,
    /// A flush: the emulator programs nothing for it, but it is counted.
    Sync,
}

/// One I/O in byte units, as the trace states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub op: TraceOp,
    pub offset_bytes: u64,
    pub length_bytes: u64,
}
