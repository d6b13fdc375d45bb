//! 000 Figure 16: TPC-C, cumulative flash writes against transactions, per configuration (000:
//! 15,000 warehouses, 1.6 TB on FDP SSD A, two hours; in place writes 7.2x more flash per
//! transaction than the optimized out-of-place configuration, which completes 2.45x more
//! New-Order transactions in the same time).
//!
//! The configurations are Table 1's rows ([`super::table1::ROWS`], without the OP-sensitivity
//! rows) on the same emulated SSDs: rows the engine cannot run yet are listed as not
//! implemented. Every row loads a fresh database on a fresh device and runs the same number of
//! transactions with the same seed. Delivery deletes what it delivers (`steady`), so the
//! dataset keeps its size and long runs reach the flash's steady state; 000's own run lets the
//! orders grow (the report says so beside the table).
use super::table1::{RowPlan, Scale, ROWS};
use crate::plot::{LineChart, Series};
use crate::tpcc::bench::{self, TpccReport};
use crate::tpcc::{Cardinality, TpccError, TpccSpec, TpccStop};
use std::fmt::Write as _;
use std::time::Duration;

/// 000's published figures: in-place flash bytes per transaction / optimized, and optimized
/// New-Order transactions / in-place in the same time.
pub const PAPER_FLASH_RATIO: f64 = 7.2;
pub const PAPER_THROUGHPUT_RATIO: f64 = 2.45;

/// One configuration's outcome.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig16Row {
    pub label: String,
    /// The report, or why the row did not run.
    pub result: Result<TpccReport, String>,
}

/// The rows Figure 16 compares: Table 1's, without its OP-sensitivity rows.
pub fn rows() -> Vec<RowPlan> {
    ROWS.iter().filter(|r| r.preset.is_none()).copied().collect()
}

/// The TPC-C run every row shares at `scale`: warehouses sized to about 80% of the scale's
/// device, the buffer pool at 10% of the dataset.
pub fn spec(scale: Scale) -> TpccSpec {
    let (warehouses, cardinality, transactions) = match scale {
        Scale::Tiny => (2, Cardinality::mini(), 4_000),
        Scale::Demo => (2, Cardinality::spec(), 100_000),
        Scale::Small => (8, Cardinality::spec(), 300_000),
        Scale::Full => (16, Cardinality::spec(), 600_000),
    };
    TpccSpec {
        warehouses,
        cardinality,
        threads: 2,
        steady: true,
        stop: TpccStop::Transactions(transactions),
        interval: Duration::from_millis(if scale == Scale::Tiny { 50 } else { 500 }),
        seed: 42,
        remote_item_percent: 1,
    }
}

/// Runs every row; `on_row` sees each as it finishes.
pub fn run(scale: Scale, on_row: &mut dyn FnMut(&Fig16Row)) -> Result<Vec<Fig16Row>, TpccError> {
    let spec = spec(scale);
    let mut out = Vec::new();
    for plan in rows() {
        let result = match plan.unavailable() {
            Some(reason) => Err(reason),
            None => {
                let mut config = plan.config(scale);
                config.buffer = Some("10%".into());
                config.label = Some(plan.label.to_string());
                Ok(bench::run(&config, &spec, true)?)
            }
        };
        let row = Fig16Row { label: plan.label.to_string(), result };
        on_row(&row);
        out.push(row);
    }
    Ok(out)
}

fn fixed(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// The table comparable to 000 Figure 16's two numbers, in markdown.
pub fn render_markdown(scale: Scale, rows: &[Fig16Row]) -> String {
    let s = spec(scale);
    let mut out = format!(
        "### 000 Figure 16 at the {} scale: TPC-C, {} warehouses ({} cardinality), {} terminals, steady size\n\n",
        scale.name(),
        s.warehouses,
        s.cardinality.name(),
        s.threads
    );
    out.push_str("| configuration | transactions | tpmC | flash B/txn | DB WAF | SSD WAF | total WAF | in-place flash/txn ÷ row | tpmC ÷ in-place |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let base = rows.first().and_then(|r| r.result.as_ref().ok());
    for row in rows {
        match &row.result {
            Ok(r) => {
                let flash_ratio = match (
                    base.and_then(|b| b.flash_bytes_per_transaction),
                    r.flash_bytes_per_transaction,
                ) {
                    (Some(b), Some(x)) if x > 0.0 => Some(b / x),
                    _ => None,
                };
                let tpmc_ratio = base.filter(|b| b.tpmc > 0.0).map(|b| r.tpmc / b.tpmc);
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
                    row.label,
                    r.counts.total(),
                    r.tpmc,
                    fixed(r.flash_bytes_per_transaction, 0),
                    fixed(r.summary.db_waf, 2),
                    fixed(r.summary.ssd_waf, 2),
                    fixed(r.summary.total_waf, 2),
                    fixed(flash_ratio, 2),
                    fixed(tpmc_ratio, 2),
                );
            }
            Err(reason) => {
                let _ = writeln!(out, "| {} | {reason} | | | | | | | |", row.label);
            }
        }
    }
    let _ = writeln!(
        out,
        "\n000 (15,000 warehouses, 1.6 TB, FDP SSD A, 2 h, orders growing): in place writes {PAPER_FLASH_RATIO}x the flash bytes per transaction of the optimized out-of-place configuration, which completes {PAPER_THROUGHPUT_RATIO}x the New-Order transactions."
    );
    out
}

/// Cumulative flash bytes (GiB) against transactions (thousands), one line per row that ran.
pub fn chart(rows: &[Fig16Row]) -> LineChart {
    let gib = f64::from(1u32 << 30);
    let series = rows
        .iter()
        .filter_map(|row| {
            let r = row.result.as_ref().ok()?;
            let points = r
                .samples
                .iter()
                .map(|s| (s.transactions as f64 / 1000.0, s.counters.flash_bytes() as f64 / gib))
                .collect();
            Some(Series::new(row.label.clone(), points))
        })
        .collect();
    LineChart::of_series(
        "000 Fig. 16: cumulative flash writes, TPC-C",
        "transactions (thousands)",
        "flash writes (GiB)",
        series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_fig16_ranks_out_of_place_below_in_place() {
        let rows = run(Scale::Tiny, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), super::rows().len());
        let ran: Vec<&TpccReport> = rows.iter().filter_map(|r| r.result.as_ref().ok()).collect();
        let runnable = super::rows().iter().filter(|r| r.unavailable().is_none()).count();
        assert_eq!(ran.len(), runnable);
        assert_eq!(super::rows()[3].label, "+ comp. + pagepack");
        let flash = |r: &TpccReport| r.flash_bytes_per_transaction.unwrap();
        // Doublewrite doubles the page writes; compression cuts them below the plain modes.
        assert!(flash(ran[0]) > flash(ran[1]), "{} vs {}", flash(ran[0]), flash(ran[1]));
        assert!(flash(ran[3]) < flash(ran[0]), "{} vs {}", flash(ran[3]), flash(ran[0]));
        assert!(ran.iter().all(|r| r.check.as_ref().is_some_and(|c| c.passed())));
        let text = render_markdown(Scale::Tiny, &rows);
        assert!(!text.contains("not yet implemented") && text.contains("7.2x"), "{text}");
        assert_eq!(chart(&rows).series.len(), runnable);
    }
}
