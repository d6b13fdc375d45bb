//! Insert key numbers for the transaction phase: YCSB's AcknowledgedCounterGenerator.
//!
//! New keys come after the loaded range: the counter starts at `record_count`. Readers must
//! only pick keys whose insert has completed, so the visible limit is the highest key number
//! below which *every* insert was acknowledged; out-of-order acknowledgements wait in a bounded
//! window (YCSB uses 2^20 slots and fails when it overflows; so do we, with an error).
//! Shared by all threads of a run (`Arc<InsertSequence>`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// YCSB `AcknowledgedCounterGenerator.WINDOW_SIZE`.
pub const ACK_WINDOW_MAX: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    #[error("too many unacknowledged insert keys (more than {ACK_WINDOW_MAX} pending)")]
    WindowFull,
    #[error("key {0} acknowledged twice or never handed out")]
    BadAck(u64),
}

#[derive(Debug)]
pub struct InsertSequence {
    next: AtomicU64,
    /// Keys [0, visible) are all inserted. Readable without the lock.
    visible: AtomicU64,
    pending: Mutex<BTreeSet<u64>>,
}

impl InsertSequence {
    /// A sequence after `record_count` loaded keys [0, record_count).
    pub fn new(record_count: u64) -> Self {
        InsertSequence {
            next: AtomicU64::new(record_count),
            visible: AtomicU64::new(record_count),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// Hand out the next key number to insert.
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Number of keys readers may choose from: [0, visible_count()).
    pub fn visible_count(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// Key numbers handed out so far (loaded + inserted or in flight).
    pub fn issued_count(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Mark `keynum`'s insert as done; advances the visible limit over every contiguous
    /// acknowledged key.
    pub fn acknowledge(&self, keynum: u64) -> Result<(), SequenceError> {
        let visible = self.visible_count();
        if keynum < visible || keynum >= self.issued_count() {
            return Err(SequenceError::BadAck(keynum));
        }
        // A poisoned lock only means another thread panicked mid-update of a plain set; the
        // set itself is still consistent (insert/remove are atomic w.r.t. panics).
        let mut pending = match self.pending.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if pending.len() >= ACK_WINDOW_MAX {
            return Err(SequenceError::WindowFull);
        }
        if !pending.insert(keynum) {
            return Err(SequenceError::BadAck(keynum));
        }
        let mut limit = self.visible.load(Ordering::Acquire);
        // Bounded by the window size: each round removes one pending key.
        for _ in 0..=ACK_WINDOW_MAX {
            if !pending.remove(&limit) {
                break;
            }
            limit += 1;
        }
        self.visible.store(limit, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_acks_advance_contiguously() {
        let s = InsertSequence::new(100);
        assert_eq!(s.visible_count(), 100);
        let a = s.next();
        let b = s.next();
        let c = s.next();
        assert_eq!((a, b, c), (100, 101, 102));
        s.acknowledge(b).unwrap();
        assert_eq!(s.visible_count(), 100);
        s.acknowledge(a).unwrap();
        assert_eq!(s.visible_count(), 102);
        s.acknowledge(c).unwrap();
        assert_eq!(s.visible_count(), 103);
        assert_eq!(s.acknowledge(c), Err(SequenceError::BadAck(c)));
        assert_eq!(s.acknowledge(500), Err(SequenceError::BadAck(500)));
    }

    #[test]
    fn random_ack_order_against_model() {
        use crate::dist::Rng;
        for seed in 0..20u64 {
            let mut rng = Rng::new(seed);
            let s = InsertSequence::new(10);
            let mut outstanding: Vec<u64> = Vec::new();
            let mut acked = std::collections::BTreeSet::new();
            for _ in 0..2000 {
                if outstanding.is_empty() || rng.below(2) == 0 {
                    outstanding.push(s.next());
                } else {
                    let i = rng.below(outstanding.len() as u64) as usize;
                    let k = outstanding.swap_remove(i);
                    s.acknowledge(k).unwrap();
                    acked.insert(k);
                }
                // Model: the first key number not yet acknowledged.
                let mut want = 10;
                while acked.contains(&want) {
                    want += 1;
                }
                assert_eq!(s.visible_count(), want, "seed {seed}");
            }
        }
    }

    #[test]
    fn concurrent_acks_converge() {
        let s = std::sync::Arc::new(InsertSequence::new(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let k = s.next();
                        s.acknowledge(k).unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(s.visible_count(), 40_000);
        assert_eq!(s.issued_count(), 40_000);
    }
}
