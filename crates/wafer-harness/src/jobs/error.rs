//! Errors of job specs and runs: one line each, naming what to fix.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum JobError {
    /// A job description that cannot run (bad size, unknown workload, region outside device).
    #[error("{0}")]
    Spec(String),
    #[error("job file {path}: {reason}")]
    JobFile { path: String, reason: String },
    #[error("device configuration: {0}")]
    Config(#[from] flashemu::ConfigError),
    #[error("device refused a command: {0}")]
    Emu(#[from] flashemu::EmuError),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
}

impl JobError {
    pub fn spec(message: impl Into<String>) -> JobError {
        JobError::Spec(message.into())
    }
}
