//! Measurement: latency histograms, counter snapshots, interval sampling and the run report.
//!
//! Engine-independent by design: everything takes plain numbers ([`CounterSnapshot`]);
//! [`sources`] maps the engine's `IoSnapshot` and the emulator's `Counters` onto them.
//! The JSON schema is documented in `crates/wafer-harness/SCHEMA.md`.

mod counters;
mod figures;
mod histogram;
mod op_kind;
mod report;
mod sampler;
pub mod sources;

pub use counters::{CounterSnapshot, ProcessError, ProcessSample, VICTIM_VALID_BINS};
pub use figures::{BytesByPurpose, Figures};
pub use histogram::{Histogram, HistogramSummary};
pub use op_kind::OpHistograms;
pub use report::{
    config_hash, ReportError, RunReport, INTERVALS_MAX, RUN_REPORT_SCHEMA, RUN_REPORT_VERSION,
};
pub use sampler::{IntervalRecord, IntervalSampler};
pub use wafer_workloads::op_kind::OpKind;
