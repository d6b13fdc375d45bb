//! `DbStats` out of the process: JSON through serde, the Prometheus text exposition format, and
//! the `metrics` facade (whatever recorder the application installed: a Prometheus exporter,
//! StatsD, ...). One flattening serves the last two, so they name every figure alike:
//! `wafer_<field>_<field>...`, e.g. `wafer_pool_hits` or `wafer_io_write_bytes_wal`; an array
//! (histogram buckets) becomes one name with an `index` label. Every figure is a gauge: the
//! counters among them count since the open, so a reopen starts them again.
use super::DbStats;
use serde_json::Value;

/// The prefix of every exported name.
pub const METRIC_PREFIX: &str = "wafer";
/// Deepest nesting the flattening follows (`DbStats` nests four levels; a bound, not a limit
/// any field reaches).
const DEPTH_MAX: usize = 8;

/// One exported figure: its name, the array index it sits at (if any), and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub index: Option<usize>,
    pub value: f64,
}

impl DbStats {
    /// The stats as one JSON object (the same fields as the struct, nested alike).
    pub fn to_json(&self) -> serde_json::Value {
        // Serialising plain numbers, maps and options cannot fail.
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        // A failure would export no metric at all, silently: the fallback must never be taken.
        debug_assert!(v.is_object(), "DbStats serialised as {v}");
        v
    }

    /// Every numeric figure, flattened (booleans as 0 and 1; absent parts leave no sample).
    pub fn samples(&self) -> Vec<Sample> {
        let mut out = Vec::new();
        flatten(&self.to_json(), METRIC_PREFIX, None, 0, &mut out);
        debug_assert!(out.iter().all(|s| s.name.starts_with(METRIC_PREFIX)));
        out
    }

    /// The Prometheus text exposition (format 0.0.4) of [`DbStats::samples`], for an
    /// application's own `/metrics` handler.
    pub fn prometheus_text(&self) -> String {
        use std::fmt::Write;
        let mut text = String::new();
        let mut last_name = String::new();
        for s in self.samples() {
            if s.name != last_name {
                // `flatten` yields a name's samples together: each family is typed once.
                debug_assert!(!text.contains(&format!("# TYPE {} gauge\n", s.name)), "{}", s.name);
                let _ = writeln!(text, "# TYPE {} gauge", s.name);
                last_name.clone_from(&s.name);
            }
            let _ = match s.index {
                Some(i) => writeln!(text, "{}{{index=\"{i}\"}} {}", s.name, s.value),
                None => writeln!(text, "{} {}", s.name, s.value),
            };
        }
        text
    }

    /// Sets a gauge of the `metrics` facade for every sample: with a recorder installed (for
    /// example `metrics-exporter-prometheus`), call it as often as the figures should refresh.
    /// Without one it does nothing.
    pub fn publish_metrics(&self) {
        for s in self.samples() {
            // Every gauge is the engine's own: an exporter's filter on the prefix keeps all.
            debug_assert!(s.name.starts_with(METRIC_PREFIX), "{}", s.name);
            match s.index {
                Some(i) => metrics::gauge!(s.name, "index" => i.to_string()).set(s.value),
                None => metrics::gauge!(s.name).set(s.value),
            }
        }
    }
}

fn flatten(v: &Value, name: &str, index: Option<usize>, depth: usize, out: &mut Vec<Sample>) {
    if depth > DEPTH_MAX {
        return;
    }
    // Names are built from sanitized parts: `prometheus_text` prints them bare.
    debug_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
    let sample = |value: f64| Sample { name: name.to_string(), index, value };
    match v {
        Value::Number(n) => out.extend(n.as_f64().map(sample)),
        Value::Bool(b) => out.push(sample(f64::from(u8::from(*b)))),
        Value::Object(fields) => {
            for (key, field) in fields {
                flatten(field, &format!("{name}_{}", sanitize(key)), None, depth + 1, out);
            }
        }
        // Arrays of numbers (buckets) keep one name; nested arrays do not occur.
        Value::Array(items) if index.is_none() => {
            for (i, item) in items.iter().enumerate() {
                flatten(item, name, Some(i), depth + 1, out);
            }
        }
        Value::Array(_) | Value::Null | Value::String(_) => {}
    }
}

/// A metric name part: `[a-zA-Z0-9_]`, anything else as `_`.
fn sanitize(key: &str) -> String {
    let name: String =
        key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    // One ASCII byte per character: a multi-byte character becomes one `_`, never bytes a
    // Prometheus name refuses.
    debug_assert_eq!(name.len(), key.chars().count(), "{key}");
    name
}

#[cfg(test)]
mod tests {
    use crate::{Db, Options};
    use std::sync::Arc;

    fn stats() -> crate::DbStats {
        let device = Arc::new(crate::device::MemoryDevice::new(4 << 20));
        let db = Db::open_on(device, Options::test_min().out_of_place()).unwrap();
        let t = db.tree("t").unwrap();
        for i in 0..200u32 {
            t.put(&i.to_be_bytes(), &[1u8; 100]).unwrap();
        }
        db.flush().unwrap();
        db.stats()
    }

    #[test]
    fn json_nests_as_the_struct_and_names_purposes() {
        let s = stats();
        let j = s.to_json();
        assert_eq!(j["pool"]["hits"].as_u64(), Some(s.pool.hits));
        let oop = s.out_of_place.unwrap();
        assert_eq!(j["out_of_place"]["gc_cycles"].as_u64(), Some(oop.gc_cycles));
        let issued = &j["out_of_place"]["space"]["issued_slots"];
        let eviction = oop.space.slots(crate::device::WritePurpose::UserEviction);
        assert_eq!(issued["user_eviction"].as_u64(), Some(eviction));
        assert!(j["blobs"].is_null(), "no blobs in this database");
    }

    #[test]
    fn prometheus_text_has_one_type_line_per_name_and_parses_as_samples() {
        let s = stats();
        let text = s.prometheus_text();
        let samples = s.samples();
        let names: std::collections::BTreeSet<&str> =
            samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), names.len());
        assert!(text.contains(&format!("wafer_pool_hits {}\n", s.pool.hits)), "{text}");
        assert!(text.contains("wafer_out_of_place_space_gc_victim_valid_hist{index=\"0\"}"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
            let bare = name.split('{').next().unwrap();
            assert!(bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
        }
    }

    /// Records the names and values of the gauges set through the facade.
    #[derive(Debug, Default)]
    struct Recorded(std::sync::Mutex<Vec<Gauge>>);
    /// A registered gauge: its name, its labels as `key=value`, its value cell.
    type Gauge = (String, Vec<String>, Arc<GaugeCell>);
    #[derive(Debug, Default)]
    struct GaugeCell(std::sync::Mutex<f64>);
    impl metrics::GaugeFn for GaugeCell {
        fn increment(&self, v: f64) {
            *self.0.lock().unwrap() += v;
        }
        fn decrement(&self, v: f64) {
            *self.0.lock().unwrap() -= v;
        }
        fn set(&self, v: f64) {
            *self.0.lock().unwrap() = v;
        }
    }
    impl metrics::Recorder for Recorded {
        fn describe_counter(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_gauge(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_histogram(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn register_counter(
            &self,
            _: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Counter {
            metrics::Counter::noop()
        }
        fn register_gauge(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
            let cell = Arc::new(GaugeCell::default());
            let labels = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            self.0.lock().unwrap().push((key.name().to_string(), labels, cell.clone()));
            metrics::Gauge::from_arc(cell)
        }
        fn register_histogram(
            &self,
            _: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Histogram {
            metrics::Histogram::noop()
        }
    }

    #[test]
    fn publish_sets_one_gauge_per_sample_through_the_installed_recorder() {
        let s = stats();
        let recorder = Recorded::default();
        metrics::with_local_recorder(&recorder, || s.publish_metrics());
        let got = recorder.0.lock().unwrap();
        assert_eq!(got.len(), s.samples().len());
        let hits = got.iter().find(|(name, _, _)| name == "wafer_pool_hits").unwrap();
        assert_eq!(*hits.2 .0.lock().unwrap(), s.pool.hits as f64);
        assert!(got.iter().any(|(_, labels, _)| labels == &["index=0".to_string()]));
    }
}
