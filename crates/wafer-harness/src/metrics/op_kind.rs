//! One latency histogram per operation kind.

use std::collections::BTreeMap;

use wafer_workloads::op_kind::OpKind;

use super::histogram::{Histogram, HistogramSummary};

/// One histogram per [`OpKind`], allocated on first use (38 KiB each), plus an all-ops one.
#[derive(Debug, Clone, Default)]
pub struct OpHistograms {
    per_kind: [Option<Histogram>; OpKind::COUNT],
}

impl OpHistograms {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn record(&mut self, kind: OpKind, latency_ns: u64) {
        self.per_kind[kind as usize].get_or_insert_with(Histogram::new).record(latency_ns);
    }

    pub fn get(&self, kind: OpKind) -> Option<&Histogram> {
        self.per_kind[kind as usize].as_ref()
    }

    /// Merge another thread's histograms.
    pub fn merge(&mut self, other: &OpHistograms) {
        for (mine, theirs) in self.per_kind.iter_mut().zip(other.per_kind.iter()) {
            if let Some(t) = theirs {
                mine.get_or_insert_with(Histogram::new).merge(t);
            }
        }
    }

    /// All kinds together.
    pub fn all(&self) -> Histogram {
        let mut h = Histogram::new();
        for k in self.per_kind.iter().flatten() {
            h.merge(k);
        }
        h
    }

    /// Summaries of the non-empty kinds, keyed by [`OpKind::name`], plus "all".
    pub fn summaries(&self) -> BTreeMap<String, HistogramSummary> {
        let mut out = BTreeMap::new();
        for kind in OpKind::ALL {
            if let Some(h) = self.get(kind).filter(|h| !h.is_empty()) {
                out.insert(kind.name().to_string(), h.summary());
            }
        }
        let all = self.all();
        if !all.is_empty() {
            out.insert("all".to_string(), all.summary());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_kind_and_merge() {
        let mut a = OpHistograms::new();
        let mut b = OpHistograms::new();
        a.record(OpKind::Read, 100);
        b.record(OpKind::Read, 300);
        b.record(OpKind::Update, 1000);
        a.merge(&b);
        let s = a.summaries();
        assert_eq!(s["read"].count, 2);
        assert_eq!(s["update"].count, 1);
        assert_eq!(s["all"].count, 3);
        assert!(!s.contains_key("scan"));
        assert_eq!(OpKind::ALL.len(), OpKind::COUNT);
        for (i, k) in OpKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
