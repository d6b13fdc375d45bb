//! Whole-module tests: a model-based test against a HashMap model and recovery rebuild against
//! incremental state. The GC simulations drive the out-of-place orchestrator and live in
//! `oop::sim_tests`.
mod model;
