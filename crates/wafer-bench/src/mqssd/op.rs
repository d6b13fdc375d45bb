//! What a benchmark point measures: reads or writes. A leaf, so the error type and the model
//! both name it.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Read,
    Write,
}
