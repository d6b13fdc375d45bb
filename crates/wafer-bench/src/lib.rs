//! Workloads, runners, metrics and reports for Wafer and flashemu.

pub mod dist;
pub mod metrics;
pub mod values;
pub mod ycsb;

pub fn placeholder() {}
