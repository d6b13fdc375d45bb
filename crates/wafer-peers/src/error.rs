//! Why a peer cannot be set up or driven: a leaf, so every engine and step returns it without
//! naming the crate root that opens them.
use std::path::{Path, PathBuf};

use crate::procio::ProcIoError;
use wafer_harness::runner::TargetError;

/// A peer that cannot be set up or driven.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{library} could not be loaded ({reason}); install the Debian package {package}")]
    Missing { library: String, package: String, reason: String },
    #[error("{engine} {op}: {message}")]
    Engine { engine: &'static str, op: &'static str, message: String },
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    ProcIo(#[from] ProcIoError),
    #[error("wafer setup: {0}")]
    Wafer(String),
    #[error("{phase} of {engine}: {message}")]
    Run { engine: String, phase: String, message: String },
}

impl PeerError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> PeerError {
        PeerError::Io { path: path.to_path_buf(), reason: e.to_string() }
    }
}
