//! The run report: what one benchmark run writes as JSON (schema in SCHEMA.md).

use std::collections::BTreeMap;

use super::figures::Figures;
use super::histogram::HistogramSummary;
use super::sampler::IntervalRecord;

/// Identifies the document type; bumped on any incompatible change to these types.
pub const RUN_REPORT_SCHEMA: &str = "wafer-bench/run";
pub const RUN_REPORT_VERSION: u32 = 1;

/// Bound on stored interval records (a week at one per second); a runner that samples
/// faster must widen its interval instead of growing the report without limit.
pub const INTERVALS_MAX: usize = 7 * 24 * 3600;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunReport {
    pub schema: String,
    pub version: u32,
    /// Free-form label, e.g. "ycsb-a zipf:0.8 800GB".
    pub label: String,
    /// The run's configuration as the runner chose to describe it (workload spec, engine and
    /// device configuration), so a report is self-describing.
    pub config: serde_json::Value,
    /// FNV-1a 64 of `config` serialized canonically (keys sorted), 16 hex digits: runs with
    /// the same hash ran the same configuration, so their series can be joined.
    #[serde(default)]
    pub config_hash: String,
    pub seed: u64,
    pub threads: u32,
    /// Cumulative figures at the end of the run.
    pub summary: Figures,
    /// Latency per operation kind (keys: `OpKind::name`, plus "all").
    pub latency: BTreeMap<String, HistogramSummary>,
    pub intervals: Vec<IntervalRecord>,
    /// Figures of the load phase (ops = records inserted); null when the run had none.
    #[serde(default)]
    pub load: Option<Figures>,
    /// What the runner observed that is not configuration (so outside `config_hash`), e.g. the
    /// target's state after the load (pages allocated, the dataset's actual fill). Free-form.
    #[serde(default)]
    pub observed: serde_json::Value,
}

/// FNV-1a 64 of the canonical JSON of `config` (serde_json maps keep keys sorted).
pub fn config_hash(config: &serde_json::Value) -> String {
    let text = config.to_string();
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    format!("{hash:016x}")
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("too many interval records (max {INTERVALS_MAX})")]
    TooManyIntervals,
    #[error("report is {found:?} v{version}, expected {RUN_REPORT_SCHEMA} v{RUN_REPORT_VERSION}")]
    Schema { found: String, version: u32 },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl RunReport {
    pub fn new(
        label: impl Into<String>,
        config: serde_json::Value,
        seed: u64,
        threads: u32,
    ) -> Self {
        RunReport {
            schema: RUN_REPORT_SCHEMA.to_string(),
            version: RUN_REPORT_VERSION,
            label: label.into(),
            config_hash: config_hash(&config),
            config,
            seed,
            threads,
            summary: Figures::from_delta(&Default::default()),
            latency: BTreeMap::new(),
            intervals: Vec::new(),
            load: None,
            observed: serde_json::Value::Null,
        }
    }

    /// Append a sample; its cumulative figures become the summary.
    pub fn push_interval(&mut self, record: IntervalRecord) -> Result<(), ReportError> {
        if self.intervals.len() >= INTERVALS_MAX {
            return Err(ReportError::TooManyIntervals);
        }
        self.summary = record.cumulative;
        self.intervals.push(record);
        Ok(())
    }

    pub fn to_json(&self) -> Result<String, ReportError> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Parse and check the schema tag (reports are user input: errors, never panics).
    pub fn from_json(text: &str) -> Result<RunReport, ReportError> {
        let report: RunReport = serde_json::from_str(text)?;
        if report.schema != RUN_REPORT_SCHEMA || report.version != RUN_REPORT_VERSION {
            return Err(ReportError::Schema { found: report.schema, version: report.version });
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CounterSnapshot, IntervalSampler, OpHistograms, OpKind};
    use super::*;

    #[test]
    fn round_trip() {
        let mut report = RunReport::new("test", serde_json::json!({"workload": "ycsb-a"}), 7, 2);
        let mut sampler = IntervalSampler::new(CounterSnapshot::default());
        let now = CounterSnapshot {
            time_ns: 1_000_000_000,
            ops: 500,
            user_bytes: 8192,
            ..CounterSnapshot::default()
        };
        report.push_interval(sampler.sample(now)).unwrap();
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 1234);
        report.latency = h.summaries();
        let text = report.to_json().unwrap();
        let back = RunReport::from_json(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.summary.ops, 500);
        let wrong = text.replace(RUN_REPORT_SCHEMA, "something-else");
        assert!(RunReport::from_json(&wrong).is_err());
        assert!(RunReport::from_json("{").is_err());
    }

    #[test]
    fn config_hash_ignores_key_order_and_sees_values() {
        let a = serde_json::json!({"a": 1, "b": {"x": 2, "y": [1, 2]}});
        let mut m = serde_json::Map::new();
        m.insert("b".into(), serde_json::json!({"y": [1, 2], "x": 2}));
        m.insert("a".into(), serde_json::json!(1));
        assert_eq!(config_hash(&a), config_hash(&serde_json::Value::Object(m)));
        assert_ne!(config_hash(&a), config_hash(&serde_json::json!({"a": 2, "b": {}})));
        assert_eq!(config_hash(&a).len(), 16);
    }
}
