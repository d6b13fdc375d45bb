//! Why a sweep failed: a leaf, so the `db_bench` driver and the sweep's sizes return it without
//! naming the experiment that calls them.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LsmError {
    #[error("{program} not found: install Debian's rocksdb-tools (apt-get install rocksdb-tools)")]
    Missing { program: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("db_bench {args} exited with {status}: {tail}")]
    Failed { args: String, status: String, tail: String },
    #[error("db_bench output: {0}")]
    Parse(String),
    #[error("unknown scale `{0}` (tiny or full)")]
    Scale(String),
}
