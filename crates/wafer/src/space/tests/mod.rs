//! Whole-module tests: a model-based test against a HashMap model, GC simulations measuring the
//! DB WAF greedy reaches, out-of-space behaviour, and recovery rebuild against incremental state.
mod driver;
mod model;
mod sim;
