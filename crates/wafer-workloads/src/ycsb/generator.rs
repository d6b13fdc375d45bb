//! Per-thread YCSB operation generators (CoreWorkload's doTransaction / doInsert).
//!
//! Determinism: every random choice draws from the caller's [`Rng`]; with one thread, the
//! stream is a pure function of (spec, seed). With several threads the only shared state is
//! the [`InsertSequence`] (which keys exist), exactly as in YCSB.

use std::ops::Range;
use std::sync::Arc;

use super::op::Operation;
use super::sequence::InsertSequence;
use super::workload::{ScanLengthDistribution, SpecError, WorkloadSpec};
use crate::dist::{Chooser, Distribution, Rng, Zipfian, YCSB_ZIPFIAN_CONSTANT};
use crate::values::ValueSpec;

/// Redraws allowed when the chooser picks a key not yet inserted (YCSB loops unbounded).
/// With YCSB's 2x over-provisioned key space the rejection probability is below 1/2 per draw,
/// so hitting the bound means a broken spec; we then fold the draw into the visible range.
const KEY_REDRAWS_MAX: u32 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpChoice {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

const OP_CHOICES: [OpChoice; 5] =
    [OpChoice::Read, OpChoice::Update, OpChoice::Insert, OpChoice::Scan, OpChoice::ReadModifyWrite];

#[derive(Debug, Clone)]
enum ScanLength {
    Uniform { min: u32, max: u32 },
    Zipfian { min: u32, zipf: Zipfian },
}

/// Generates the transaction phase of one thread.
#[derive(Debug)]
pub struct WorkloadGenerator {
    spec: WorkloadSpec,
    /// Cumulative normalized proportions, aligned with [`OP_CHOICES`].
    op_cdf: [f64; 5],
    keys: Chooser,
    /// YCSB grows only latest (and our plain zipfian) with inserts; uniform, scrambled and
    /// hot-cold keep the range they were built with.
    grows_with_inserts: bool,
    scan_length: ScanLength,
    inserts: Arc<InsertSequence>,
}

impl WorkloadGenerator {
    /// `inserts` must be shared by all threads of the run and start at `spec.record_count`.
    pub fn new(spec: &WorkloadSpec, inserts: Arc<InsertSequence>) -> Result<Self, SpecError> {
        spec.validate()?;
        let total = spec.mix.total();
        let mut op_cdf = [0.0; 5];
        let mut acc = 0.0;
        for (slot, p) in op_cdf.iter_mut().zip(spec.mix.as_array()) {
            acc += p / total;
            *slot = acc;
        }
        let (keys, grows_with_inserts) = match spec.request_distribution {
            // YCSB: the scrambled zipfian spans the keys expected to exist by the end.
            Distribution::ScrambledZipfian { .. } => {
                (spec.request_distribution.chooser(spec.request_key_space())?, false)
            }
            Distribution::Latest { .. } | Distribution::Zipfian { .. } => {
                let count = inserts.visible_count().max(spec.record_count);
                (spec.request_distribution.chooser(count)?, true)
            }
            Distribution::Uniform | Distribution::HotCold { .. } => {
                (spec.request_distribution.chooser(spec.record_count)?, false)
            }
        };
        let (min, max) = (spec.min_scan_length, spec.max_scan_length);
        let scan_length = match spec.scan_length_distribution {
            ScanLengthDistribution::Uniform => ScanLength::Uniform { min, max },
            ScanLengthDistribution::Zipfian => ScanLength::Zipfian {
                min,
                zipf: Zipfian::new(u64::from(max - min) + 1, YCSB_ZIPFIAN_CONSTANT),
            },
        };
        Ok(WorkloadGenerator {
            spec: spec.clone(),
            op_cdf,
            keys,
            grows_with_inserts,
            scan_length,
            inserts,
        })
    }

    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    pub fn inserts(&self) -> &Arc<InsertSequence> {
        &self.inserts
    }

    fn choose_op(&self, rng: &mut Rng) -> OpChoice {
        let u = rng.next_f64();
        for (choice, edge) in OP_CHOICES.iter().zip(self.op_cdf) {
            if u < edge {
                return *choice;
            }
        }
        // Rounding left the last edge a hair below 1: the last non-zero proportion wins.
        let last = self.spec.mix.as_array().iter().rposition(|p| *p > 0.0).unwrap_or(0);
        OP_CHOICES[last]
    }

    /// YCSB nextKeynum: draw until the key exists (is at or below the acknowledged limit).
    fn next_keynum(&mut self, rng: &mut Rng) -> u64 {
        let visible = self.inserts.visible_count();
        debug_assert!(visible > 0);
        if self.grows_with_inserts {
            self.keys.grow(visible);
        }
        for _ in 0..KEY_REDRAWS_MAX {
            let k = self.keys.next(rng);
            if k < visible {
                return k;
            }
        }
        self.keys.next(rng) % visible
    }

    fn value(&self, rng: &mut Rng) -> ValueSpec {
        ValueSpec { seed: rng.next_u64(), len_bytes: self.spec.value_size_bytes }
    }

    fn scan_len(&self, rng: &mut Rng) -> u32 {
        match &self.scan_length {
            ScanLength::Uniform { min, max } => {
                rng.range_inclusive(u64::from(*min), u64::from(*max)) as u32
            }
            ScanLength::Zipfian { min, zipf } => min + zipf.next(rng) as u32,
        }
    }

    /// The next operation of this thread.
    pub fn next_op(&mut self, rng: &mut Rng) -> Operation {
        let format = self.spec.key_format;
        match self.choose_op(rng) {
            OpChoice::Read => Operation::Read { key: format.key(self.next_keynum(rng)) },
            OpChoice::Update => {
                let key = format.key(self.next_keynum(rng));
                Operation::Update { key, value: self.value(rng) }
            }
            OpChoice::Insert => {
                let keynum = self.inserts.next();
                Operation::Insert { key: format.key(keynum), keynum, value: self.value(rng) }
            }
            OpChoice::Scan => {
                let start = format.key(self.next_keynum(rng));
                Operation::Scan { start, len: self.scan_len(rng) }
            }
            OpChoice::ReadModifyWrite => {
                let key = format.key(self.next_keynum(rng));
                Operation::ReadModifyWrite { key, value: self.value(rng) }
            }
        }
    }
}

/// The load phase: inserts key numbers [0, record_count), split into contiguous per-thread
/// ranges so each thread's stream is deterministic (YCSB shares one counter instead; keys are
/// hashed either way, so every thread writes all over the key space).
#[derive(Debug, Clone)]
pub struct LoadGenerator {
    spec: WorkloadSpec,
    keynums: Range<u64>,
}

impl LoadGenerator {
    pub fn new(spec: &WorkloadSpec, thread_id: u32, threads: u32) -> Result<Self, SpecError> {
        spec.validate()?;
        assert!(threads > 0 && thread_id < threads, "thread {thread_id} of {threads}");
        let n = spec.record_count;
        let start = n * u64::from(thread_id) / u64::from(threads);
        let end = n * (u64::from(thread_id) + 1) / u64::from(threads);
        Ok(LoadGenerator { spec: spec.clone(), keynums: start..end })
    }

    /// Records left for this thread.
    pub fn remaining(&self) -> u64 {
        self.keynums.end - self.keynums.start
    }

    /// The next insert, or None when this thread's share is loaded.
    pub fn next_op(&mut self, rng: &mut Rng) -> Option<Operation> {
        let keynum = self.keynums.next()?;
        Some(Operation::Insert {
            key: self.spec.key_format.key(keynum),
            keynum,
            value: ValueSpec { seed: rng.next_u64(), len_bytes: self.spec.value_size_bytes },
        })
    }
}
