//! Workloads, runners, metrics and reports for Wafer and flashemu.

pub mod dist;

pub fn placeholder() {}
