//! Why a run failed: a leaf, so the phases return it without naming the runner that calls them.

use super::exec::WorkerError;
use super::spec::SpecError;
use crate::metrics::{ProcessError, ReportError};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Spec(String),
    #[error("{phase} phase: {source}")]
    Worker { phase: &'static str, source: WorkerError },
    #[error("a worker thread panicked")]
    WorkerPanicked,
    #[error("process counters: {0}")]
    Process(ProcessError),
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl From<SpecError> for RunError {
    fn from(e: SpecError) -> RunError {
        RunError::Spec(e.0)
    }
}
