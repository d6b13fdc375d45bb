//! 000 Figure 14 (sec. 7.4): in place against out of place with the optimizations on five
//! more enterprise SSDs (894 GB to 7.2 TB), each 90% full, YCSB-A zipf 0.8, the buffer pool
//! fixed at 80 GB (10% of the PM9A3's 800 GB dataset, so a smaller share on larger drives).
//! 000: total WAF improves 6.2x (Solidigm D7-P5520) to 9.76x (Kioxia CM7-R); in-place SSD WAF
//! 1.93-2.68, out-of-place SSD WAF about 1 (1.12 on the Solidigm); larger drives show lower DB
//! WAF (more free space: 752 GB on 7.2 TB against 94 GB on 894 GB).
//!
//! 000 names two of its drives and gives neither their OP nor their geometry, and no
//! per-device values beyond those ranges. The emulated geometries ([`GEOMETRIES`]) are
//! derived from the scale's device (the `ent` flash, standing for the PM9A3) by varying what
//! differs between such drives: capacity, OP and superblock (GC unit) size. Each stands for a
//! class of drive, not a model. The optimized configuration is the furthest Table 1 row this
//! build can run ([`optimized_plan`]); 000's is all optimizations (NoWA and aligned GC units).
use super::table1::{self, ExperimentError, RowPlan, Scale};
use crate::emu_report::table::human_bytes;
use crate::metrics::RunReport;
use crate::plot::{BarChart, Chart};
use crate::progress::Progress;
use crate::runner::setup::BenchConfig;
use std::fmt::Write as _;

/// One emulated SSD, as changes to the scale's device.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Geometry {
    pub name: &'static str,
    pub stands_for: &'static str,
    /// Blocks per chip as a multiple of the scale's device: its capacity.
    pub capacity_factor: u32,
    /// OP; None keeps the scale device's (17% on `ent`, 25% on `tiny`).
    pub op: Option<f64>,
    /// Chips of each channel one superblock spans (the GC unit's width; the presets' is 1).
    pub superblock_chips_per_channel: u32,
}

/// 000's device range (894 GB to 7.2 TB) as five emulated SSDs.
pub const GEOMETRIES: [Geometry; 5] = [
    Geometry {
        name: "A: 1x, the scale's OP",
        stands_for: "000's Samsung PM9A3 (894 GB, Table 1's device; OP 17% inferred)",
        capacity_factor: 1,
        op: None,
        superblock_chips_per_channel: 1,
    },
    Geometry {
        name: "B: 1x, OP 7%",
        stands_for: "a read-intensive drive of the same size with the common 7% OP",
        capacity_factor: 1,
        op: Some(0.07),
        superblock_chips_per_channel: 1,
    },
    Geometry {
        name: "C: 2x, OP 7%",
        stands_for: "a drive twice the size (000's range: 894 GB to 7.2 TB)",
        capacity_factor: 2,
        op: Some(0.07),
        superblock_chips_per_channel: 1,
    },
    Geometry {
        name: "D: 2x, OP 7%, 2x superblock",
        stands_for:
            "the same with a GC unit twice as wide (000 sec. 5.3: 4-16 GB GC units across vendors)",
        capacity_factor: 2,
        op: Some(0.07),
        superblock_chips_per_channel: 2,
    },
    Geometry {
        name: "E: 4x, OP 7%",
        stands_for: "the large end (000: the 7.2 TB drive, 8x the PM9A3; 4x here to fit memory)",
        capacity_factor: 4,
        op: Some(0.07),
        superblock_chips_per_channel: 1,
    },
];

/// OP raised in these steps (at most to this) when a small device cannot hold the geometry's
/// OP beside its GC reserve (the `tiny` device: 64 superblocks, 5 reserved).
const OP_STEP: f64 = 0.01;
const OP_MAX: f64 = 0.5;

/// The emulated device a geometry gives at a scale, as it ran.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Device {
    pub flash_bytes: u64,
    pub logical_bytes: u64,
    pub op: f64,
    pub superblock_bytes: u64,
    pub superblocks: u32,
}

impl Geometry {
    /// `config` (a row's configuration at the scale) on this geometry's device, with the device
    /// that gives.
    pub fn apply(&self, config: &mut BenchConfig) -> Result<Device, String> {
        let mut emu = base_emu(config)?;
        let factor = self.capacity_factor.max(1);
        let g = &mut emu.geometry;
        g.blocks_per_chip = g.blocks_per_chip.saturating_mul(factor);
        g.superblock_chips_per_channel = self.superblock_chips_per_channel;
        if let Some(op) = self.op {
            emu.op = op;
        }
        // The smallest OP at or above the geometry's that the device can hold (bounded).
        while emu.validate().is_err() && emu.op < OP_MAX {
            emu.op = ((emu.op + OP_STEP) * 100.0).round() / 100.0;
        }
        emu.validate().map_err(|e| format!("{}: {e}", self.name))?;
        let int = |v: u32| toml::Value::Integer(i64::from(v));
        config.emu.insert("blocks-per-chip".into(), int(emu.geometry.blocks_per_chip));
        config
            .emu
            .insert("superblock-chips-per-channel".into(), int(self.superblock_chips_per_channel));
        config.emu.insert("op".into(), toml::Value::Float(emu.op));
        let layout = emu.layout();
        let slot = flashemu::LBA_BYTES;
        Ok(Device {
            flash_bytes: layout.physical_slots * slot,
            logical_bytes: layout.logical_blocks * slot,
            op: emu.op,
            superblock_bytes: u64::from(layout.slots_per_superblock) * slot,
            superblocks: layout.superblock_count,
        })
    }
}

/// The emulator configuration a bench configuration names (`emu:PRESET` and its overrides).
fn base_emu(config: &BenchConfig) -> Result<flashemu::Config, String> {
    let device = config.device.as_deref().unwrap_or("emu:cns");
    let preset = device
        .strip_prefix("emu:")
        .filter(|p| !p.ends_with(".toml"))
        .ok_or_else(|| format!("fig14 needs an emulator preset, not `{device}`"))?;
    let mut emu = flashemu::Config::preset(preset).map_err(|e| e.to_string())?;
    for (key, value) in &config.emu {
        let text = match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        emu.set(key, &text).map_err(|e| e.to_string())?;
    }
    Ok(emu)
}

/// The furthest row of 000's Table 1 chain this build can run: all optimizations once NoWA
/// and GC-unit alignment exist, GDT with compression today.
pub fn optimized_plan() -> Option<RowPlan> {
    const CHAIN: [&str; 5] =
        ["+ aligning GC unit", "+ NoWA", "+ GDT", "+ comp. + pagepack", "-> out-of-place"];
    CHAIN.iter().find_map(|label| {
        table1::ROWS
            .iter()
            .find(|r| r.label == *label && r.preset.is_none() && r.unavailable().is_none())
            .copied()
    })
}

fn in_place_plan() -> RowPlan {
    table1::ROWS[0]
}

/// The buffer pool every geometry gets: 10% of the dataset on the scale's own device (000:
/// 80 GB = 10% of the PM9A3's 800 GB, on every drive), in bytes.
fn fixed_pool_bytes(scale: Scale) -> Result<u64, String> {
    let config = scale.base_config();
    let layout = base_emu(&config)?.layout();
    let dataset = layout.logical_blocks as f64 * 4096.0 * config.fill.unwrap_or(0.9);
    Ok((dataset * 0.1) as u64 / 4096 * 4096)
}

/// One geometry's pair of runs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig14Row {
    pub geometry: String,
    pub stands_for: String,
    pub device: Device,
    pub in_place: RunReport,
    pub optimized: RunReport,
}

impl Fig14Row {
    /// In-place total WAF over the optimized one (000: 6.2x to 9.76x).
    pub fn improvement(&self) -> Option<f64> {
        let (a, b) = (self.in_place.summary.total_waf?, self.optimized.summary.total_waf?);
        (b > 0.0).then(|| a / b)
    }
}

/// Everything Figure 14 measured.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig14Report {
    pub scale: String,
    /// The Table 1 row that ran as the optimized configuration.
    pub optimized: String,
    pub pool_bytes: u64,
    pub rows: Vec<Fig14Row>,
}

#[derive(Debug, thiserror::Error)]
pub enum Fig14Error {
    #[error("{0}")]
    Run(#[from] ExperimentError),
    #[error("fig14: {0}")]
    Setup(String),
}

/// The Table 1 row named `label` (not an OP-sensitivity row), if this build runs it; without a
/// label, [`optimized_plan`].
pub fn optimized_row(label: Option<&str>) -> Result<RowPlan, Fig14Error> {
    let Some(label) = label else {
        return optimized_plan()
            .ok_or_else(|| Fig14Error::Setup("no out-of-place row runs".into()));
    };
    let rows = || table1::ROWS.iter().filter(|r| r.preset.is_none());
    let plan = rows().find(|r| r.label == label).ok_or_else(|| {
        let known: Vec<&str> = rows().map(|r| r.label).collect();
        Fig14Error::Setup(format!("no Table 1 row `{label}` (rows: {})", known.join(", ")))
    })?;
    match plan.unavailable() {
        Some(reason) => Err(Fig14Error::Setup(format!("row `{label}`: {reason}"))),
        None => Ok(*plan),
    }
}

/// Runs in place and the optimized configuration (`optimized`, a Table 1 row's label, or
/// [`optimized_plan`]) on every geometry; `on_run` sees each (geometry, configuration,
/// report) as it finishes.
pub fn run(
    scale: Scale,
    optimized: Option<&str>,
    progress: &mut dyn Progress,
    on_run: &mut dyn FnMut(&str, &str, &RunReport),
) -> Result<Fig14Report, Fig14Error> {
    run_on(scale, &GEOMETRIES, optimized, progress, on_run)
}

/// [`run`] on the given geometries.
pub fn run_on(
    scale: Scale,
    geometries: &[Geometry],
    optimized: Option<&str>,
    progress: &mut dyn Progress,
    on_run: &mut dyn FnMut(&str, &str, &RunReport),
) -> Result<Fig14Report, Fig14Error> {
    let optimized = optimized_row(optimized)?;
    let pool_bytes = fixed_pool_bytes(scale).map_err(Fig14Error::Setup)?;
    let mut rows = Vec::with_capacity(geometries.len());
    for geometry in geometries {
        let mut reports = Vec::with_capacity(2);
        let mut device = None;
        for plan in [in_place_plan(), optimized] {
            let mut config = plan.config(scale);
            device = Some(geometry.apply(&mut config).map_err(Fig14Error::Setup)?);
            config.buffer = Some(pool_bytes.to_string());
            config.label = Some(format!("{} on {}", plan.label, geometry.name));
            let report = super::run_config(plan.label, &config, progress)?;
            on_run(geometry.name, plan.label, &report);
            reports.push(report);
        }
        let (Some(optimized), Some(in_place), Some(device)) =
            (reports.pop(), reports.pop(), device)
        else {
            unreachable!("two runs per geometry");
        };
        rows.push(Fig14Row {
            geometry: geometry.name.into(),
            stands_for: geometry.stands_for.into(),
            device,
            in_place,
            optimized,
        });
    }
    Ok(Fig14Report {
        scale: scale.name().into(),
        optimized: optimized.label.into(),
        pool_bytes,
        rows,
    })
}

fn fixed(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// The table comparable to 000 Figure 14, in markdown.
pub fn render_markdown(report: &Fig14Report) -> String {
    let mut out = format!(
        "### 000 Figure 14 at the {} scale: in place vs {} per emulated SSD (YCSB-A zipf 0.8, 90% full, buffer pool {} on every device)\n\n",
        report.scale,
        report.optimized,
        human_bytes(report.pool_bytes)
    );
    out.push_str("| device | flash | logical | OP | superblock | in-place DB / SSD / total WAF | optimized DB / SSD / total WAF | improvement |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in &report.rows {
        let d = &row.device;
        let wafs = |r: &RunReport| {
            let s = &r.summary;
            format!("{} / {} / {}", fixed(s.db_waf), fixed(s.ssd_waf), fixed(s.total_waf))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0}% | {} | {} | {} | {}x |",
            row.geometry,
            human_bytes(d.flash_bytes),
            human_bytes(d.logical_bytes),
            d.op * 100.0,
            human_bytes(d.superblock_bytes),
            wafs(&row.in_place),
            wafs(&row.optimized),
            fixed(row.improvement()),
        );
    }
    out.push_str("\nWhat each device stands for:\n\n");
    for row in &report.rows {
        let _ = writeln!(out, "- {}: {}", row.geometry, row.stands_for);
    }
    out.push_str(
        "\n000 (five drives, 894 GB to 7.2 TB, all optimizations, 80 GB pool): improvement 6.2x (Solidigm D7-P5520) to 9.76x (Kioxia CM7-R); in-place SSD WAF 1.93-2.68; out-of-place SSD WAF about 1.00 (Solidigm 1.12).\n",
    );
    out
}

/// DB, SSD and total WAF of both configurations per device, and the improvement per device.
pub fn charts(report: &Fig14Report) -> Vec<(&'static str, Chart)> {
    let groups: Vec<String> = report.rows.iter().map(|r| r.geometry.clone()).collect();
    let nan = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let waf = BarChart {
        title: format!("000 Fig. 14: WAF per emulated SSD ({} scale)", report.scale),
        y_label: "WAF".into(),
        groups: groups.clone(),
        series_labels: ["DB", "SSD", "total"]
            .iter()
            .flat_map(|w| [format!("in-place {w}"), format!("{} {w}", report.optimized)])
            .collect(),
        values: report
            .rows
            .iter()
            .map(|r| {
                let (a, b) = (&r.in_place.summary, &r.optimized.summary);
                vec![
                    nan(a.db_waf),
                    nan(b.db_waf),
                    nan(a.ssd_waf),
                    nan(b.ssd_waf),
                    nan(a.total_waf),
                    nan(b.total_waf),
                ]
            })
            .collect(),
        stacked: false,
    };
    let improvement = BarChart {
        title: format!(
            "000 Fig. 14: total WAF in place / {} ({} scale)",
            report.optimized, report.scale
        ),
        y_label: "improvement (x)".into(),
        groups,
        series_labels: vec!["measured".into()],
        values: report.rows.iter().map(|r| vec![nan(r.improvement())]).collect(),
        stacked: false,
    };
    vec![("waf", Chart::Bar(waf)), ("improvement", Chart::Bar(improvement))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometries_differ_in_capacity_op_and_superblock() {
        let config = Scale::Demo.base_config();
        let devices: Vec<Device> =
            GEOMETRIES.iter().map(|g| g.apply(&mut config.clone()).unwrap()).collect();
        assert_eq!(devices[0].op, 0.17, "A keeps ent's OP");
        assert_eq!(devices[1].op, 0.07);
        assert_eq!(devices[2].flash_bytes, 2 * devices[1].flash_bytes);
        assert_eq!(devices[3].superblock_bytes, 2 * devices[2].superblock_bytes);
        assert_eq!(devices[3].flash_bytes, devices[2].flash_bytes);
        assert_eq!(devices[4].flash_bytes, 4 * devices[0].flash_bytes);
        // The tiny device cannot hold 7% OP beside its GC reserve: raised to what it can.
        let tiny = GEOMETRIES[1].apply(&mut Scale::Tiny.base_config()).unwrap();
        assert!(tiny.op > 0.07 && tiny.op < 0.25, "{}", tiny.op);
        assert!(optimized_plan().is_some_and(|p| p.label != "in-place"));
        let packed = optimized_row(Some("+ comp. + pagepack")).unwrap();
        assert_eq!(packed.label, "+ comp. + pagepack");
        assert!(optimized_row(Some("nonesuch")).is_err());
        assert!(
            optimized_row(Some("+ NoWA")).is_err()
                || table1::ROWS.iter().any(|r| r.label == "+ NoWA" && r.unavailable().is_none())
        );
    }

    /// Runs `geometries` at the tiny scale and checks each row's shape.
    fn check_tiny(geometries: &[Geometry]) -> Fig14Report {
        let mut seen = Vec::new();
        let report =
            run_on(Scale::Tiny, geometries, None, &mut crate::progress::Silent, &mut |g, c, _| {
                seen.push((g.to_string(), c.to_string()))
            })
            .unwrap();
        assert_eq!(report.rows.len(), geometries.len());
        assert_eq!(seen.len(), 2 * geometries.len());
        for row in &report.rows {
            // Each run is on its geometry's device, with the one fixed pool.
            let config = &row.in_place.config;
            let capacity = config.get("data_device_capacity_bytes").and_then(|v| v.as_u64());
            assert_eq!(capacity, Some(row.device.logical_bytes), "{}", row.geometry);
            let improvement = row.improvement();
            assert!(improvement.is_some_and(|x| x > 1.0), "{}: {improvement:?}", row.geometry);
        }
        let text = render_markdown(&report);
        assert_eq!(text.matches("x |").count(), geometries.len(), "{text}");
        assert_eq!(charts(&report).len(), 2);
        report
    }

    #[test]
    fn tiny_fig14_runs_a_lower_op_and_a_wider_superblock() {
        // B (OP raised to what the tiny flash holds) and D (superblocks twice as wide).
        let report = check_tiny(&[GEOMETRIES[1], GEOMETRIES[3]]);
        assert_eq!(
            report.rows[1].device.superblock_bytes,
            2 * report.rows[0].device.superblock_bytes
        );
    }

    #[test]
    #[ignore = "ten YCSB runs up to 32 MiB, about 7 CPU seconds in a debug build: `wafer experiment fig14 --scale tiny`"]
    fn tiny_fig14_runs_every_geometry() {
        check_tiny(&GEOMETRIES);
    }
}
