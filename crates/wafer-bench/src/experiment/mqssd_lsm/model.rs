//! 001 eq. 9-12 costed with a device profile: total insert, query and scan seconds of a sweep
//! cell.
//!
//! Sizes are in bytes throughout (N data, T file, B page, B' block, X scan); eq. 9's ratio of
//! files touched to T is the same in bytes as in key-value pairs. Costs are the profile's
//! device-wide microseconds at k (001 assumes all k threads keep the device busy). Two readings
//! of the O() terms, stated because they set the shape:
//! - levels = max(1, log_F(N / (C T))), continuous, as the formula is printed;
//! - eq. 11 replaces eq. 9's files touched per flushed file with T (key-value pairs per file,
//!   which is what the L1 grows to at 001's N). Here it is the file count L1 holds on average
//!   over the load, 1 + N / (2T), which is what that O(T) stands for at a smaller N.
use serde::{Deserialize, Serialize};

use super::sweep::{FillRun, Layout, ReadBench, ReadRun, Sweep};
use crate::mqssd::{Costs, DeviceProfile};

const US_PER_S: f64 = 1e6;

/// The sizes eq. 9-12 need, in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub data_bytes: f64,
    pub file_bytes: f64,
    pub l0_files: f64,
    pub page_bytes: f64,
    pub block_bytes: f64,
    pub scan_bytes: f64,
}

impl Shape {
    pub fn of(sweep: &Sweep, page_bytes: u64) -> Shape {
        Shape {
            data_bytes: sweep.data_bytes() as f64,
            file_bytes: sweep.file_bytes as f64,
            l0_files: f64::from(sweep.l0_files),
            page_bytes: page_bytes as f64,
            block_bytes: sweep.block_bytes as f64,
            scan_bytes: f64::from(sweep.scan_keys) * (sweep.key_bytes + sweep.value_bytes) as f64,
        }
    }

    /// log_F(N / (C T)), at least one level.
    pub fn levels(&self, fanout: u32) -> f64 {
        let ratio = self.data_bytes / (self.l0_files * self.file_bytes);
        (ratio.ln() / f64::from(fanout.max(2)).ln()).max(1.0)
    }

    /// Sorted runs a point query reads one block of: C + levels, or the single L1.
    pub fn sorted_runs(&self, layout: Layout) -> f64 {
        match layout {
            Layout::Leveled { fanout } => self.l0_files + self.levels(fanout),
            Layout::SingleLevel => 1.0,
        }
    }

    /// Files read and rewritten per file flushed: C + F log_F(N/CT) (eq. 9), or the average L1
    /// of the single level (eq. 11).
    pub fn files_touched(&self, layout: Layout) -> f64 {
        match layout {
            Layout::Leveled { fanout } => self.l0_files + f64::from(fanout) * self.levels(fanout),
            Layout::SingleLevel => 1.0 + self.data_bytes / (2.0 * self.file_bytes),
        }
    }

    /// Reading and rewriting one file: t + s + T(alpha + beta)/B, microseconds.
    fn file_rewrite_us(&self, c: &Costs) -> f64 {
        c.t_us + c.s_us + self.file_bytes * (c.alpha_us + c.beta_us) / self.page_bytes
    }

    /// One block of one sorted run: t + B' alpha / B, microseconds.
    fn block_read_us(&self, c: &Costs) -> f64 {
        c.t_us + self.block_bytes * c.alpha_us / self.page_bytes
    }

    /// Eq. 9 / 11 times N: seconds to insert the whole data set and compact it.
    pub fn insert_s(&self, layout: Layout, c: &Costs) -> f64 {
        let flushed_files = self.data_bytes / self.file_bytes;
        flushed_files * self.files_touched(layout) * self.file_rewrite_us(c) / US_PER_S
    }

    /// Eq. 10 / 12 times the queries: seconds for `queries` point queries.
    pub fn query_s(&self, layout: Layout, c: &Costs, queries: u64) -> f64 {
        queries as f64 * self.sorted_runs(layout) * self.block_read_us(c) / US_PER_S
    }

    /// A query plus X (t/T + alpha/B) per scan, times the scans.
    pub fn scan_s(&self, layout: Layout, c: &Costs, scans: u64) -> f64 {
        let range_us = self.scan_bytes * (c.t_us / self.file_bytes + c.alpha_us / self.page_bytes);
        let per_scan_us = self.sorted_runs(layout) * self.block_read_us(c) + range_us;
        scans as f64 * per_scan_us / US_PER_S
    }
}

/// Eq. 9-12 for one (layout, k), in seconds, before any constant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub layout: Layout,
    pub k: u32,
    pub insert_s: f64,
    pub query_s: f64,
    pub scan_s: f64,
    pub sorted_runs: f64,
    pub files_touched: f64,
}

pub fn predict_all(sweep: &Sweep, profile: &DeviceProfile) -> Vec<Prediction> {
    let shape = Shape::of(sweep, profile.info.page_bytes);
    let mut out = Vec::new();
    for &layout in &sweep.layouts {
        for &k in &sweep.ks {
            let costs = profile.costs_at(k);
            out.push(Prediction {
                layout,
                k,
                insert_s: shape.insert_s(layout, &costs),
                query_s: shape.query_s(layout, &costs, sweep.queries),
                scan_s: shape.scan_s(layout, &costs, sweep.scans),
                sorted_runs: shape.sorted_runs(layout),
                files_touched: shape.files_touched(layout),
            });
        }
    }
    out
}

/// Which of a cell's three times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Insert,
    Query,
    Scan,
}

impl Prediction {
    pub fn get(&self, m: Measure) -> f64 {
        match m {
            Measure::Insert => self.insert_s,
            Measure::Query => self.query_s,
            Measure::Scan => self.scan_s,
        }
    }
}

/// The measured seconds of a cell, if it ran.
pub fn measured(
    fills: &[FillRun],
    reads: &[ReadRun],
    layout: Layout,
    k: u32,
    m: Measure,
) -> Option<f64> {
    let read = |bench: ReadBench| {
        reads
            .iter()
            .find(|r| r.layout == layout && r.k == k && r.bench == bench)
            .map(|r| r.elapsed_s)
    };
    match m {
        Measure::Insert => {
            fills.iter().find(|f| f.layout == layout && f.k == k).map(|f| f.insert_s)
        }
        Measure::Query => read(ReadBench::Query),
        Measure::Scan => read(ReadBench::Scan),
    }
}

/// One scale constant per measure: predictions x constant are what the tables print beside the
/// measurements (001 Figure 5 does the same), so only the shapes are compared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Constants {
    pub insert: f64,
    pub query: f64,
    pub scan: f64,
}

impl Constants {
    /// The geometric mean of measured / predicted over the cells that ran (1 where none did).
    pub fn fit(predictions: &[Prediction], fills: &[FillRun], reads: &[ReadRun]) -> Constants {
        let one = |m: Measure| {
            let logs: Vec<f64> = predictions
                .iter()
                .filter_map(|p| {
                    let got = measured(fills, reads, p.layout, p.k, m)?;
                    let want = p.get(m);
                    (got > 0.0 && want > 0.0).then(|| (got / want).ln())
                })
                .collect();
            if logs.is_empty() {
                1.0
            } else {
                (logs.iter().sum::<f64>() / logs.len() as f64).exp()
            }
        };
        Constants {
            insert: one(Measure::Insert),
            query: one(Measure::Query),
            scan: one(Measure::Scan),
        }
    }

    pub fn get(&self, m: Measure) -> f64 {
        match m {
            Measure::Insert => self.insert,
            Measure::Query => self.query,
            Measure::Scan => self.scan,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setups that fall with k and flat page costs, like this machine's disk.
    fn costs(k: u32) -> Costs {
        let k = f64::from(k);
        Costs { s_us: 60.0 / k.sqrt(), beta_us: 1.3, t_us: 78.0 / k.sqrt(), alpha_us: 3.5 }
    }

    #[test]
    fn queries_get_cheaper_with_fanout_and_cheapest_on_one_level() {
        let shape = Shape::of(&Sweep::full(), 4096);
        let q = |layout| shape.query_s(layout, &costs(4), 1000);
        let fanouts = [2, 4, 8, 16, 32].map(|fanout| q(Layout::Leveled { fanout }));
        assert!(fanouts.windows(2).all(|w| w[1] <= w[0]), "{fanouts:?}");
        assert!(q(Layout::SingleLevel) < fanouts[4]);
        let s = |layout| shape.scan_s(layout, &costs(4), 1000);
        assert!(s(Layout::SingleLevel) < s(Layout::Leveled { fanout: 2 }));
        // The scan's range part is the same for every layout and more than a query's runs.
        assert!(s(Layout::SingleLevel) > q(Layout::SingleLevel));
    }

    #[test]
    fn compaction_gets_cheaper_with_k_and_the_single_level_writes_most() {
        let shape = Shape::of(&Sweep::full(), 4096);
        let f8 = Layout::Leveled { fanout: 8 };
        assert!(shape.insert_s(f8, &costs(16)) < shape.insert_s(f8, &costs(1)));
        assert!(shape.insert_s(Layout::SingleLevel, &costs(1)) > shape.insert_s(f8, &costs(1)));
        // N is 258 files: the single level touches 1 + 129 per flush on average.
        assert!((shape.files_touched(Layout::SingleLevel) - 130.0).abs() < 1e-9);
        assert!((shape.levels(2) - 6.0).abs() < 0.05);
        assert!((shape.levels(128) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn constants_are_the_geometric_mean_ratio() {
        let layout = Layout::SingleLevel;
        let p = |k, q| Prediction {
            layout,
            k,
            insert_s: 1.0,
            query_s: q,
            scan_s: 1.0,
            sorted_runs: 1.0,
            files_touched: 1.0,
        };
        let predictions = [p(1, 2.0), p(2, 1.0)];
        let read = |k, s| ReadRun { layout, k, bench: ReadBench::Query, elapsed_s: s, ops: 1 };
        // Measured / predicted = 4 and 1: geometric mean 2.
        let c = Constants::fit(&predictions, &[], &[read(1, 8.0), read(2, 1.0)]);
        assert!((c.query - 2.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c.insert, 1.0);
    }
}
