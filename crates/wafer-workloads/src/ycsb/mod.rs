//! YCSB core workloads, faithfully: operation mixes A-F, request distributions, key names,
//! insert key sequence and load phase. The runner that executes [`Operation`]s against the
//! engine lives elsewhere; this module only decides *what* to do, deterministically.
//!
//! Typical use, per thread:
//! ```
//! use std::sync::Arc;
//! use wafer_workloads::dist::Rng;
//! use wafer_workloads::ycsb::{InsertSequence, Workload, WorkloadGenerator};
//! let spec = Workload::A.spec(10_000);
//! let inserts = Arc::new(InsertSequence::new(spec.record_count));
//! let mut generator = WorkloadGenerator::new(&spec, inserts.clone()).unwrap();
//! let mut rng = Rng::for_thread(42, 0);
//! let op = generator.next_op(&mut rng);
//! ```

mod generator;
mod key;
mod op;
mod sequence;
mod workload;

pub use generator::{LoadGenerator, WorkloadGenerator};
pub use key::{Key, KeyFormat, KEY_DIGITS_MAX, KEY_LEN_MAX_BYTES, KEY_PREFIX};
pub use op::Operation;
pub use sequence::{InsertSequence, SequenceError, ACK_WINDOW_MAX};
pub use workload::{
    OperationMix, ScanLengthDistribution, SpecError, Workload, WorkloadSpec, YCSB_RECORD_BYTES,
};

#[cfg(test)]
mod tests;
