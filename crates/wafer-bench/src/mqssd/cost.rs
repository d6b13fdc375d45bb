//! What the MQSSD costs say about Wafer's B-tree (001 sec. 5 does this for an LSM).
//!
//! A point lookup that misses the buffer pool reads one page at a random place: t(k) + alpha(k).
//! Write-back differs by layout. In place, every evicted page goes back to its own home, a run
//! of one page: s(k) + beta(k) each, and with the doublewrite buffer the batch is first written
//! sequentially (one setup plus beta per page). Out of place, a write-back batch is appended as
//! one run: one setup per run plus beta per page, and DB GC copies ride in the same runs but read
//! their victims first.
use super::{Costs, DeviceProfile};
use crate::metrics::RunReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteLayout {
    InPlace { doublewrite: bool },
    OutOfPlace,
}

/// Device pages per operation of a workload (averages over a run).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OpMix {
    /// Pages read per operation (buffer-pool misses, each a random page).
    pub read_pages: f64,
    /// Dirty pages written back per operation (user data, eviction and checkpoint).
    pub user_write_pages: f64,
    /// DB GC copies per operation (out of place only); each is also read once.
    pub gc_copy_pages: f64,
    /// Pages per write-back run: the eviction batch (out of place, doublewrite).
    pub batch_pages: f64,
    /// Write-ahead log pages per operation: sequential appends.
    pub wal_pages: f64,
}

/// Device microseconds one operation costs, all k threads sharing the device.
pub fn cost_per_op_us(costs: &Costs, layout: WriteLayout, mix: &OpMix) -> f64 {
    let lookup_us = mix.read_pages * (costs.t_us + costs.alpha_us);
    let batch_pages = mix.batch_pages.max(1.0);
    let sequential_page_us = costs.beta_us + costs.s_us / batch_pages;
    let write_us = match layout {
        WriteLayout::InPlace { doublewrite } => {
            let home_us = mix.user_write_pages * (costs.s_us + costs.beta_us);
            let dwb_us = if doublewrite { mix.user_write_pages * sequential_page_us } else { 0.0 };
            home_us + dwb_us
        }
        WriteLayout::OutOfPlace => {
            let appended_pages = mix.user_write_pages + mix.gc_copy_pages;
            // GC reads its victims' live pages in segment order: mostly sequential.
            let gc_read_us = mix.gc_copy_pages * (costs.alpha_us + costs.t_us / batch_pages);
            appended_pages * sequential_page_us + gc_read_us
        }
    };
    lookup_us + write_us + mix.wal_pages * sequential_page_us
}

/// Operations per second the device sustains for `mix` (infinite when nothing touches it).
pub fn ops_per_s(costs: &Costs, layout: WriteLayout, mix: &OpMix) -> f64 {
    1e6 / cost_per_op_us(costs, layout, mix)
}

/// A `wafer bench ycsb` run beside what the profile predicts for its operation mix.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunComparison {
    pub label: String,
    pub k: u32,
    pub write_mode: String,
    pub read_pages_per_op: f64,
    pub write_pages_per_op: f64,
    pub measured_ops_per_s: f64,
    pub predicted_ops_per_s: f64,
    /// (predicted - measured) / measured.
    pub relative_error: f64,
    /// The same mix at k = 1: what the run would do if its I/O were not concurrent at all.
    pub predicted_k1_ops_per_s: f64,
}

const PAGE_BYTES: f64 = 4096.0;
/// The engine's default eviction batch when the report does not say.
const BATCH_PAGES_DEFAULT: f64 = 64.0;

/// The mix of `report`'s measured phase (pages per operation by purpose) costed at k = the
/// run's threads. None when the run did no operations.
pub fn compare_run(profile: &DeviceProfile, report: &RunReport) -> Option<RunComparison> {
    let figures = &report.summary;
    let measured = figures.ops_per_sec?;
    if figures.ops == 0 {
        return None;
    }
    let engine = find_key(&report.config, "write_mode");
    let write_mode = engine.and_then(|v| v.as_str()).unwrap_or("in-place").to_string();
    let layout = match write_mode.as_str() {
        "out-of-place" => WriteLayout::OutOfPlace,
        "in-place-no-dwb" => WriteLayout::InPlace { doublewrite: false },
        _ => WriteLayout::InPlace { doublewrite: true },
    };
    let batch_pages = find_key(&report.config, "eviction_batch_pages")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(BATCH_PAGES_DEFAULT);
    let per_op = |bytes: u64| bytes as f64 / PAGE_BYTES / figures.ops as f64;
    let b = &figures.bytes;
    // A WAL kept in memory (the benchmark's default) costs the device nothing.
    let wal_in_memory = find_key(&report.config, "wal").and_then(|v| v.as_str()) == Some("memory");
    let wal_bytes = if wal_in_memory { 0 } else { b.wal };
    let mix = OpMix {
        read_pages: per_op(b.db_read),
        user_write_pages: per_op(b.user + b.metadata + b.compensation + b.padding),
        gc_copy_pages: per_op(b.gc_copy),
        batch_pages,
        wal_pages: per_op(wal_bytes),
    };
    let k = report.threads.max(1);
    let predicted = ops_per_s(&profile.costs_at(k), layout, &mix);
    Some(RunComparison {
        label: report.label.clone(),
        k,
        write_mode,
        read_pages_per_op: mix.read_pages,
        write_pages_per_op: per_op(b.db_issued),
        measured_ops_per_s: measured,
        predicted_ops_per_s: predicted,
        relative_error: (predicted - measured) / measured,
        predicted_k1_ops_per_s: ops_per_s(&profile.costs_at(1), layout, &mix),
    })
}

/// The first value under `key` anywhere in a JSON tree (depth-first, bounded by the tree).
fn find_key<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => {
            map.get(key).or_else(|| map.values().find_map(|v| find_key(v, key)))
        }
        serde_json::Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COSTS: Costs = Costs { s_us: 50.0, beta_us: 3.0, t_us: 20.0, alpha_us: 2.0 };

    #[test]
    fn lookup_miss_is_setup_plus_transfer() {
        let mix = OpMix { read_pages: 1.0, ..OpMix::default() };
        let cost = cost_per_op_us(&COSTS, WriteLayout::OutOfPlace, &mix);
        assert!((cost - 22.0).abs() < 1e-9);
    }

    #[test]
    fn out_of_place_batches_amortise_the_setup() {
        let mix = OpMix { user_write_pages: 1.0, batch_pages: 64.0, ..OpMix::default() };
        let oop = cost_per_op_us(&COSTS, WriteLayout::OutOfPlace, &mix);
        let inplace = cost_per_op_us(&COSTS, WriteLayout::InPlace { doublewrite: false }, &mix);
        let dwb = cost_per_op_us(&COSTS, WriteLayout::InPlace { doublewrite: true }, &mix);
        assert!((oop - (3.0 + 50.0 / 64.0)).abs() < 1e-9);
        assert!((inplace - 53.0).abs() < 1e-9);
        assert!(dwb > inplace && inplace > oop);
    }
}
