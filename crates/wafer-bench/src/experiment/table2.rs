//! Table 2 of 000 (sec. 7.5): a conventional SSD against a ZNS SSD of the same flash and
//! firmware (000: CNS 894 GB, ZNS 951 GB), YCSB-A zipf 0.8. Three groups: the 800 GB dataset
//! (in place and out of place with every optimization on CNS, out of place with compression
//! and GDT on ZNS), the same larger dataset on both (1,500 GB: more than the CNS holds
//! uncompressed), and ZNS at CNS's relative fill (1,596 GB). 000 compares throughput because
//! its CNS cannot report flash writes; the emulator reports them, so the rows give DB, SSD and
//! total WAF, which is what the throughput followed (sec. 7.5: "primarily due to lower DB
//! WAF").
//!
//! Here both devices are the scale's emulated flash: the CNS with OP 6% (894/951, so the ZNS
//! has 000's 6.4% more capacity) and the ZNS with none; the dataset is Table 1's 90% of the
//! CNS zone space, scaled by 000's dataset ratios (1,500/800 and 1,596/800); the ZNS DB sits
//! on a `ZonedVolume` (its superblock and snapshots on a conventional metadata device).
use super::table1::{self, ExperimentError, RowSetup, Scale};
use crate::metrics::RunReport;
use crate::plot::BarChart;
use crate::progress::Progress;
use crate::runner::engine::WriteModeChoice;
use crate::runner::setup::BenchConfig;
use crate::runner::table::Row;
use std::fmt::Write as _;

/// The CNS's OP: 000's two devices have 894 and 951 GB of the same flash.
pub const CNS_OP: f64 = 1.0 - 894.0 / 951.0;

/// The CNS's OP at `scale`: `CNS_OP`, except on the tiny device, whose 64 superblocks need
/// its preset's OP for the superblocks its GC reserves and keeps open.
pub fn cns_op(scale: Scale) -> Option<f64> {
    (scale != Scale::Tiny).then_some(CNS_OP)
}

/// Table 1's fill: 800 GB of 894.
const BASE_FILL: f64 = 0.9;

/// Page ids for up to this share of the slots in every out-of-place row, all compressed
/// (pages compress to about 41%): the larger datasets put 169-180% of the zone space in
/// logical pages, and the cap on live pages that leaves the open zones and GC's free target
/// empty counts pages, not the slots they take (with 16 open zones of 128 it would refuse the
/// ZNS row of Table 1's dataset, 85% of its zone space, whose pages take about 40%).
const COMPRESSED_FILL_PERCENT: i64 = 250;

/// One row: its label, write mode and setup, device, and dataset as a multiple of Table 1's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Table2Row {
    pub label: &'static str,
    pub write_mode: WriteModeChoice,
    pub setup: RowSetup,
    pub zns: bool,
    /// Dataset relative to 000's 800 GB.
    pub data_factor: f64,
    /// The dataset is that share of this row's own zone space rather than of the CNS's (000's
    /// same-fill row: 1,596 GB on 951 is 1,500 on 894).
    pub same_fill: bool,
}

const fn row(
    label: &'static str,
    write_mode: WriteModeChoice,
    setup: RowSetup,
    zns: bool,
    data_factor: f64,
) -> Table2Row {
    Table2Row { label, write_mode, setup, zns, data_factor, same_fill: false }
}

const OOP: WriteModeChoice = WriteModeChoice::OutOfPlace;

pub const ROWS: [Table2Row; 6] = [
    row("in-place (cns)", WriteModeChoice::InPlace, RowSetup::Mode, false, 1.0),
    row("nowa (cns)", OOP, RowSetup::NowaAligned, false, 1.0),
    row("zns", OOP, RowSetup::Gdt, true, 1.0),
    row("nowa (cns, larger DB)", OOP, RowSetup::NowaAligned, false, 1500.0 / 800.0),
    row("zns (larger DB)", OOP, RowSetup::Gdt, true, 1500.0 / 800.0),
    Table2Row {
        same_fill: true,
        ..row("zns (same fill)", OOP, RowSetup::Gdt, true, 1500.0 / 800.0)
    },
];

/// 000 Table 2 as published, by this table's labels: used SSD, logical DB size (GB), K OPS.
pub const PAPER_ROWS: [(&str, &str, u32, f64); 6] = [
    ("in-place (cns)", "CNS", 800, 156.8),
    ("nowa (cns)", "CNS", 800, 322.2),
    ("zns", "ZNS", 800, 330.3),
    ("nowa (cns, larger DB)", "CNS", 1500, 250.7),
    ("zns (larger DB)", "ZNS", 1500, 328.9),
    ("zns (same fill)", "ZNS", 1596, 277.5),
];

impl Table2Row {
    /// The row's configuration at `scale`: Table 1's row of the same setup on the CNS (OP
    /// `CNS_OP`) or on the same flash as a ZNS SSD, filled to the row's dataset.
    pub fn config(&self, scale: Scale) -> Result<BenchConfig, ExperimentError> {
        let plan = table1::row(self.label, self.write_mode, self.setup);
        let mut config = plan.config(scale);
        let (cns, zns) = zone_space_bytes(scale, &config)?;
        let emu = &mut config.emu;
        let open = config.engine.get("open_zones").and_then(toml::Value::as_integer);
        if self.zns {
            emu.insert("interface".into(), toml::Value::String("zns".into()));
            emu.insert("op".into(), toml::Value::Float(0.0));
            // Whole zones (0: the zone size), whatever order the geometry keys apply in.
            emu.insert("zone-capacity-blocks".into(), toml::Value::Integer(0));
            // As many open and active zones as the engine keeps open.
            let open = toml::Value::Integer(open.unwrap_or(16));
            emu.insert("max-open-zones".into(), open.clone());
            emu.insert("max-active-zones".into(), open);
            // A DB zone is a device zone.
            config.engine.insert("zones_per_gc_unit".into(), toml::Value::Integer(1));
        } else if let Some(op) = cns_op(scale) {
            emu.insert("op".into(), toml::Value::Float(op));
        }
        // The dataset: Table 1's fill of the CNS zone space times the row's factor, as a
        // fill of this row's own zone space (of its own from the start in the same-fill row).
        let own = if self.zns && !self.same_fill { zns } else { cns };
        let fill = BASE_FILL * self.data_factor * cns / own;
        config.fill = Some(fill);
        if self.write_mode == OOP {
            let over = toml::Value::Integer(COMPRESSED_FILL_PERCENT);
            config.engine.insert("max_fill_percent".into(), over);
        }
        Ok(config)
    }
}

/// The zone space an out-of-place database would manage on the scale's flash as the CNS and
/// as the ZNS SSD: their capacities (the metadata is under 0.5% of either).
fn zone_space_bytes(scale: Scale, config: &BenchConfig) -> Result<(f64, f64), ExperimentError> {
    let device = config.device.clone().unwrap_or_default();
    let preset = device.strip_prefix("emu:").unwrap_or("cns");
    let mut flash = crate::runner::setup::emu_config(preset, config)
        .map_err(|source| ExperimentError::Setup { row: "table2 device", source })?;
    if let Some(op) = cns_op(scale) {
        flash.op = op;
    }
    let cns = flash.layout().logical_blocks as f64 * 4096.0;
    let zns = flash.layout().physical_slots as f64 * 4096.0;
    assert!(zns > cns && cns > 0.0);
    Ok((cns, zns))
}

/// Runs every row on a fresh device of the scale.
pub fn run(
    scale: Scale,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(Row, Option<RunReport>)>, ExperimentError> {
    let mut out = Vec::with_capacity(ROWS.len());
    for r in &ROWS {
        let (row, report) = table1::run_config(r.label, &r.config(scale)?, progress)?;
        on_row(&row);
        out.push((row, Some(report)));
    }
    Ok(out)
}

/// The measured rows beside 000's as a markdown table.
pub fn render_markdown(scale: Scale, rows: &[(Row, Option<RunReport>)]) -> String {
    let mut out = format!(
        "| config ({} scale) | DB WAF | DB WAF vict. | SSD WAF | total WAF | flash B/op | 000: SSD, DB size, K OPS |\n\
         |---|---|---|---|---|---|---|\n",
        scale.name()
    );
    for (row, _) in rows {
        let paper = PAPER_ROWS
            .iter()
            .find(|p| p.0 == row.label)
            .map_or(String::new(), |p| format!("{}, {} GB, {}", p.1, p.2, p.3));
        let figure =
            |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        match &row.figures {
            Ok(f) => {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {paper} |",
                    row.label,
                    figure(f.db_waf, 2),
                    figure(f.db_waf_victim, 2),
                    figure(f.ssd_waf, 3),
                    figure(f.total_waf, 2),
                    figure(f.physical_bytes_per_op, 0),
                );
            }
            Err(why) => {
                let _ = writeln!(out, "| {} | {why} | | | | | {paper} |", row.label);
            }
        }
    }
    out
}

/// DB, SSD and total WAF per configuration that ran.
pub fn chart(scale: Scale, rows: &[Row]) -> BarChart {
    let title =
        format!("000 Table 2: CNS vs ZNS on the same emulated flash ({} scale)", scale.name());
    super::table3::waf_chart(title, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ZNS rows fill their larger device to the CNS rows' dataset, or to the same share in
    /// the same-fill row; every ZNS run has SSD WAF 1 exactly and ZNS holds the same dataset
    /// with less total WAF than the NoWA CNS.
    #[test]
    fn tiny_table2_runs_zns_at_ssd_waf_one() {
        let fill = |i: usize| ROWS[i].config(Scale::Tiny).unwrap().fill.unwrap();
        assert!(fill(2) < fill(1) && fill(4) < fill(3) && fill(3) == fill(5));
        // At the demo scale's OP the same fill is 000's 1,596 GB against 1,500.
        let demo = |i: usize| ROWS[i].config(Scale::Demo).unwrap().fill.unwrap();
        assert!((demo(5) / demo(4) - 1596.0 / 1500.0).abs() < 0.01, "{}", demo(5) / demo(4));
        let rows = run(Scale::Tiny, &mut crate::progress::Silent, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), ROWS.len());
        let fig = |i: usize| rows[i].1.as_ref().map(|r| r.summary).unwrap();
        for i in [2, 4, 5] {
            let f = fig(i);
            assert_eq!(f.bytes.ssd_gc, 0, "{}", ROWS[i].label);
            // Never above one; below it only by the partly filled flash pages the device's
            // power-loss protected write buffer still holds when the phase's counters are read
            // (how many depends on the threads' timing: 0.35% once, under a loaded machine).
            let waf = f.ssd_waf.unwrap();
            assert!(waf <= 1.0 + 1e-9 && waf > 0.99, "{}: {waf}", ROWS[i].label);
        }
        let total = |i: usize| fig(i).total_waf.unwrap_or(f64::NAN);
        assert!(total(2) < total(0), "ZNS {} vs in place {}", total(2), total(0));
        let text = render_markdown(Scale::Tiny, &rows);
        assert!(text.contains("| zns |") && text.contains("330.3"), "{text}");
    }
}
