//! Table 1 of 000 (sec. 7.3): YCSB-A, zipf 0.8, the dataset at 90% of the SSD, buffer pool at
//! 10% of the dataset, each optimization enabled in turn. Every row runs on a fresh emulated SSD
//! of the same configuration with the same workload and seed. Rows whose write mode or
//! optimization this build's engine lacks are listed as not yet implemented, never faked.

use crate::metrics::RunReport;
use crate::progress::Progress;
use crate::runner::engine::WriteModeChoice;
use crate::runner::setup::{self, BenchConfig};
use crate::runner::table::Row;
use crate::runner::{self, RunError, SetupError};

/// How big an experiment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The 8 MiB `tiny` emulator at 85% fill, 2 capacities of writes: seconds (tests, smoke
    /// runs).
    Tiny,
    /// 512 MiB of flash (the `ent` flash with 32-page blocks and 32 blocks per chip: 128
    /// superblocks of 4 MiB), measured from 1x to 3x: `wafer demo`, tens of seconds.
    Demo,
    /// 2 GiB of flash (the `ent` preset with 32 blocks per chip: 128 superblocks of 16 MiB),
    /// measured from 1x to 3x capacities of DB writes: minutes on a 2-core machine.
    Small,
    /// The full `ent` preset (4 GiB of flash at OP 17%, 256 superblocks), measured from 2x to
    /// 4x as 000 sec. 7.1 does (steady state after 4x in total).
    Full,
}

/// Fraction of random bytes in Table 1's values (see `Scale::base_config`).
pub const TABLE1_VALUE_RANDOM_FRACTION: f64 = 0.62;

/// The "+ blobs" row's threshold: every 1000-byte YCSB value goes out of line.
pub const TABLE1_BLOB_THRESHOLD_BYTES: i64 = 512;

impl Scale {
    pub fn parse(text: &str) -> Result<Scale, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "tiny" => Ok(Scale::Tiny),
            "demo" => Ok(Scale::Demo),
            "small" => Ok(Scale::Small),
            "full" => Ok(Scale::Full),
            _ => Err(format!("unknown scale `{text}` (expected tiny, demo, small, full)")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Demo => "demo",
            Scale::Small => "small",
            Scale::Full => "full",
        }
    }

    /// The benchmark every row shares (the write mode is set per row).
    pub fn base_config(&self) -> BenchConfig {
        let mut c = BenchConfig {
            workload: Some("a".into()),
            fill: Some(0.9),
            zipf_theta: Some(0.8),
            buffer: Some("10%".into()),
            threads: Some(2),
            seed: Some(42),
            // Values 62% random: this engine's leaves of 1000-byte values are about 56% full
            // and their free space compresses away, so pages then compress with LZ4 to about
            // 41% (measured: 0.398 at 0.60), 000 sec. 3.1's ratio for its YCSB dataset; the
            // YCSB default (0.39: records at 41%) would give pages at 27% (docs/results/table1.md).
            compression_ratio: Some(TABLE1_VALUE_RANDOM_FRACTION),
            ..BenchConfig::default()
        };
        match self {
            Scale::Tiny => {
                c.device = Some("emu:tiny".into());
                // An 8 MiB device: a doublewrite area of one 16-page batch (not 1 MiB) and a
                // 16 MiB WAL in memory checkpointed every 2 MiB.
                let int = |v: i64| toml::Value::Integer(v);
                c.engine.insert("eviction_batch_pages".into(), int(16));
                c.engine.insert("data_offset_bytes".into(), int(17 * 4096));
                c.engine.insert("wal_capacity_bytes".into(), int(16 << 20));
                c.engine.insert("checkpoint_log_bytes".into(), int(2 << 20));
                c.until = Some("2x".into());
                c.warmup = Some("1x".into());
                c.interval = Some("100ms".into());
            }
            Scale::Demo => {
                c.device = Some("emu:ent".into());
                let int = |v: i64| toml::Value::Integer(v);
                c.engine.insert("wal_capacity_bytes".into(), int(256 << 20));
                c.engine.insert("checkpoint_log_bytes".into(), int(64 << 20));
                c.emu.insert("pages-per-block".into(), toml::Value::Integer(32));
                c.emu.insert("blocks-per-chip".into(), toml::Value::Integer(32));
                c.until = Some("3x".into());
                c.warmup = Some("1x".into());
                c.interval = Some("500ms".into());
            }
            Scale::Small => {
                c.device = Some("emu:ent".into());
                c.emu.insert("blocks-per-chip".into(), toml::Value::Integer(32));
                c.until = Some("3x".into());
                c.warmup = Some("1x".into());
                c.interval = Some("1s".into());
            }
            Scale::Full => {
                c.device = Some("emu:ent".into());
                c.until = Some("4x".into());
                c.warmup = Some("2x".into());
                c.interval = Some("5s".into());
            }
        }
        c
    }
}

/// How a row configures the engine and the device beyond the scale's base configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSetup {
    /// The write mode alone.
    Mode,
    /// 000's naive out-of-place row (sec. 7.2): zones 1/32 of the SSD's GC unit (250 MB zones
    /// on an 8 GB unit there), 16 open zones with random placement, greedy GC (at the tiny
    /// scale, whose unit is 32 slots: 1/4 and 4 open zones).
    NaiveOutOfPlace,
    /// The naive row with every page compressed by LZ4 (000 sec. 6.2's codec) and packed into
    /// 4 KiB slots by best-fit decreasing (000 sec. 3).
    NaiveCompressed,
    /// The same without page packing (not a row of 000; its sec. 3.2 comparison): compressed
    /// pages concatenated, some crossing into the next slot and costing two reads.
    NaiveConcatenated,
    /// Grouping by deathtime (000 sec. 4.2) on the compressed row: GDT placement over the same
    /// 16 open zones and GDT-aware GC (greedy victims until a zone's worth is invalid).
    Gdt,
    /// GDT without compression (000 Figure 13c's "+ GDT": 4.02 -> 3.36 against the
    /// out-of-place row).
    GdtUncompressed,
    /// NoWA (000 sec. 5.4) on the GDT row: zones open in groups, compensation before the
    /// SSD's GC would copy; zones still 1/32 of the SSD's GC unit.
    Nowa,
    /// NoWA with zones aligned to the GC unit: 16 open zones x 1/16 of the unit (000 sec.
    /// 7.2: 16 x 512 MiB = the PM9A3's 8 GB unit).
    NowaAligned,
    /// The aligned NoWA row without compression (000's "- comp.").
    NowaAlignedUncompressed,
    /// The aligned NoWA row with values of [`TABLE1_BLOB_THRESHOLD_BYTES`] and more stored out
    /// of line (not a row of 000: index-level write reduction, which its sec. 8 names as
    /// complementary): each value written once, the leaves holding references.
    Blobs,
    /// The blob row with lazy commits (`Durability::None`): a commit then waits for no log
    /// flush, so the blobs of many commits share slots and map-journal flushes. (Under the
    /// table's Sync commits every commit writes its blobs' slot and map records itself.) Not a
    /// row of `ROWS`: at the tiny scale its map journal fills (docs/results/blobs.md).
    BlobsLazy,
    /// FDP instead of NoWA (000 sec. 5.5, Table 3): GDT and compression, zones of one reclaim
    /// unit, as many open zones as the device has handles, each writing under its own.
    Fdp,
    /// The FDP row without compression.
    FdpUncompressed,
}

/// Reclaim unit handles of the FDP device Table 3 runs on (000's SSD A has 8 per reclaim
/// group; the tiny device gets 4, its open-zone budget).
pub fn fdp_handles(scale: Scale) -> u32 {
    if scale == Scale::Tiny {
        4
    } else {
        8
    }
}

/// One row of the table: its name in 000 and what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPlan {
    pub label: &'static str,
    pub write_mode: WriteModeChoice,
    pub setup: RowSetup,
    /// Another emulator preset than the scale's (sensitivity rows).
    pub preset: Option<&'static str>,
    /// An optimization the engine does not offer yet (None: the write mode is all it needs).
    pub missing: Option<&'static str>,
    /// The scale's device with an FDP interface (`fdp_handles` reclaim unit handles).
    pub fdp_device: bool,
}

pub const fn row(label: &'static str, write_mode: WriteModeChoice, setup: RowSetup) -> RowPlan {
    RowPlan { label, write_mode, setup, preset: None, missing: None, fdp_device: false }
}

/// The rows of 000 Table 1 in order, plus the engine's in-place mode without a doublewrite
/// buffer (not a row of 000: the baseline's writes minus the doublewrite copies), compression
/// without page packing (000 sec. 3.2's comparison), GDT without compression (000 Figure
/// 13c), and the first two rows again on `cns` (OP 7%): how much the SSD's unstated OP moves
/// them.
pub const ROWS: [RowPlan; 13] = [
    row("in-place", WriteModeChoice::InPlace, RowSetup::Mode),
    row("(in-place, no doublewrite)", WriteModeChoice::InPlaceNoDwb, RowSetup::Mode),
    row("-> out-of-place", WriteModeChoice::OutOfPlace, RowSetup::NaiveOutOfPlace),
    row("+ comp. + pagepack", WriteModeChoice::OutOfPlace, RowSetup::NaiveCompressed),
    row("(+ comp., no pagepack)", WriteModeChoice::OutOfPlace, RowSetup::NaiveConcatenated),
    row("+ GDT", WriteModeChoice::OutOfPlace, RowSetup::Gdt),
    row("+ GDT (no comp.)", WriteModeChoice::OutOfPlace, RowSetup::GdtUncompressed),
    row("+ NoWA", WriteModeChoice::OutOfPlace, RowSetup::Nowa),
    row("+ aligning GC unit", WriteModeChoice::OutOfPlace, RowSetup::NowaAligned),
    row("- comp.", WriteModeChoice::OutOfPlace, RowSetup::NowaAlignedUncompressed),
    row("+ blobs", WriteModeChoice::OutOfPlace, RowSetup::Blobs),
    RowPlan {
        preset: Some("cns"),
        ..row("(in-place, OP 7%)", WriteModeChoice::InPlace, RowSetup::Mode)
    },
    RowPlan {
        preset: Some("cns"),
        ..row("(-> out-of-place, OP 7%)", WriteModeChoice::OutOfPlace, RowSetup::NaiveOutOfPlace)
    },
];

impl RowPlan {
    /// Why this build cannot run the row, if it cannot.
    pub fn unavailable(&self) -> Option<String> {
        self.missing.map(|m| format!("not yet implemented ({m})"))
    }

    /// The scale's configuration with this row's write mode, device and engine settings.
    pub fn config(&self, scale: Scale) -> BenchConfig {
        let mut config = scale.base_config();
        config.write_mode = Some(self.write_mode.name().to_string());
        config.label = Some(format!("{} [{}]", self.label, scale.name()));
        if let (Some(preset), Some(device)) = (self.preset, &config.device) {
            if device.starts_with("emu:") && scale != Scale::Tiny {
                config.device = Some(format!("emu:{preset}"));
            }
        }
        if self.fdp_device {
            config.emu.insert("interface".into(), toml::Value::String("fdp".into()));
            let handles = i64::from(fdp_handles(scale));
            config.emu.insert("ruh-count".into(), toml::Value::Integer(handles));
            // Zones of a whole reclaim unit, 8 of them open and GC's free zones leave room for
            // 86-89% of the device only (88.9% at demo scale); every row of the table gets the
            // same fill. (000's Table 3: 1.6 TB on FDP SSD A, whose capacity it does not state.)
            config.fill = Some(0.85);
        }
        let compressed = [
            RowSetup::NaiveCompressed,
            RowSetup::NaiveConcatenated,
            RowSetup::Gdt,
            RowSetup::Nowa,
            RowSetup::NowaAligned,
            RowSetup::Fdp,
            RowSetup::Blobs,
            RowSetup::BlobsLazy,
        ];
        if compressed.contains(&self.setup) {
            let packing = self.setup != RowSetup::NaiveConcatenated;
            config.engine.insert("compression".into(), toml::Value::String("lz4".into()));
            config.engine.insert("packing".into(), toml::Value::Boolean(packing));
        }
        if self.setup != RowSetup::Mode {
            let aligned = matches!(
                self.setup,
                RowSetup::NowaAligned
                    | RowSetup::NowaAlignedUncompressed
                    | RowSetup::Blobs
                    | RowSetup::BlobsLazy
            );
            // The tiny device's 8 MiB cannot spare 16 open zones: 4 open, zones of 1/8 of the
            // unit (1/4 aligned).
            let fdp = matches!(self.setup, RowSetup::Fdp | RowSetup::FdpUncompressed);
            let open = match (fdp, scale == Scale::Tiny) {
                (true, _) => fdp_handles(scale) as i64,
                (false, true) => 4,
                (false, false) => 16,
            };
            let per_unit = match (aligned, fdp, scale == Scale::Tiny) {
                (_, true, _) => 1,
                (true, _, _) => open,
                (false, false, true) => 8,
                (false, false, false) => 32,
            };
            let e = &mut config.engine;
            e.insert("zones_per_gc_unit".into(), toml::Value::Integer(per_unit));
            e.insert("open_zones".into(), toml::Value::Integer(open));
            let gdt = !matches!(
                self.setup,
                RowSetup::NaiveOutOfPlace | RowSetup::NaiveCompressed | RowSetup::NaiveConcatenated
            );
            let placement = if gdt { "gdt" } else { "random" };
            e.insert("placement".into(), toml::Value::String(placement.into()));
            let nowa = matches!(
                self.setup,
                RowSetup::Nowa
                    | RowSetup::NowaAligned
                    | RowSetup::NowaAlignedUncompressed
                    | RowSetup::Blobs
                    | RowSetup::BlobsLazy
            );
            e.insert("nowa".into(), toml::Value::Boolean(nowa));
            e.insert("fdp".into(), toml::Value::Boolean(fdp));
            if self.setup == RowSetup::BlobsLazy {
                e.insert("durability".into(), toml::Value::String("none".into()));
            }
            if matches!(self.setup, RowSetup::Blobs | RowSetup::BlobsLazy) {
                let t = toml::Value::Integer(TABLE1_BLOB_THRESHOLD_BYTES);
                e.insert("blob_threshold".into(), t);
                // The same records as the other rows, each value a page id of its own (its
                // bytes compressed and packed several to a slot): ids beyond the slots.
                e.insert("max_fill_percent".into(), toml::Value::Integer(250));
            }
        }
        config
    }
}

/// 000 Table 1 as published; the rows live with the HTML report that sets them beside a run's.
pub use crate::report::html::TABLE1_PAPER_ROWS as PAPER_ROWS;

/// The published rows as text, aligned like [`crate::runner::table::render`]'s first columns.
pub fn render_paper_rows() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "000 Table 1 as published (PM9A3, 800 GB, 64 threads; the physical column is as printed; \
         its DB WAF is the artifact's victim formula, so it stands under DB WAF vict.):\n",
    );
    // The measured table's first headers, at the widths of the rows below.
    const WIDTHS: [usize; 9] = [20, 7, 6, 12, 7, 9, 12, 13, 9];
    let header: Vec<String> = crate::runner::table::HEADERS
        .iter()
        .zip(WIDTHS)
        .enumerate()
        .map(|(i, (h, w))| if i == 0 { format!("{h:<w$}") } else { format!("{h:>w$}") })
        .collect();
    let _ = writeln!(out, "{}", header.join(" "));
    for (label, ops, db, ssd, logical, physical, hit) in PAPER_ROWS {
        let _ = writeln!(
            out,
            "{label:<20} {ops:>7} {:>6} {db:>12.2} {ssd:>7.2} {:>9.2} {logical:>12} {physical:>13} {hit:>9.3}",
            "-",
            db * ssd
        );
    }
    out
}

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("row {row}: {source}")]
    Setup { row: &'static str, source: SetupError },
    #[error("row {row}: {source}")]
    Run { row: &'static str, source: RunError },
}

/// Runs every available row; `on_row` sees each finished row (to print as it goes).
pub fn run(
    scale: Scale,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(Row, Option<RunReport>)>, ExperimentError> {
    run_rows(scale, &ROWS, progress, on_row)
}

/// The rows whose label contains one of `patterns` (case-insensitive), in table order; every
/// row when `patterns` is empty. Err names a pattern that matches no row.
pub fn select_rows(patterns: &[String]) -> Result<Vec<RowPlan>, String> {
    let matches = |p: &str, r: &RowPlan| r.label.to_lowercase().contains(&p.to_lowercase());
    if let Some(p) = patterns.iter().find(|p| !ROWS.iter().any(|r| matches(p, r))) {
        let labels: Vec<&str> = ROWS.iter().map(|r| r.label).collect();
        return Err(format!("no Table 1 row matches `{p}` (rows: {})", labels.join(", ")));
    }
    Ok(ROWS
        .iter()
        .filter(|r| patterns.is_empty() || patterns.iter().any(|p| matches(p, r)))
        .copied()
        .collect())
}

/// Runs the given rows in order (see [`run`]).
pub fn run_rows(
    scale: Scale,
    plans: &[RowPlan],
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(Row, Option<RunReport>)>, ExperimentError> {
    let mut out = Vec::with_capacity(plans.len());
    for &plan in plans {
        let (row, report) = match plan.unavailable() {
            Some(reason) => (Row { label: plan.label.to_string(), figures: Err(reason) }, None),
            None => {
                let (row, report) = run_config(plan.label, &plan.config(scale), progress)?;
                (row, Some(report))
            }
        };
        on_row(&row);
        out.push((row, report));
    }
    Ok(out)
}

/// Runs one row's configuration on a fresh device.
pub fn run_config(
    label: &'static str,
    config: &BenchConfig,
    progress: &mut dyn Progress,
) -> Result<(Row, RunReport), ExperimentError> {
    let prepared =
        setup::prepare(config).map_err(|source| ExperimentError::Setup { row: label, source })?;
    let report = runner::run(prepared.target.as_ref(), &prepared.spec, prepared.setup, progress)
        .map_err(|source| ExperimentError::Run { row: label, source })?;
    Ok((Row { label: label.to_string(), figures: Ok(report.summary) }, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_000_and_unavailable_ones_say_why() {
        assert_eq!(ROWS[0].label, "in-place");
        // Every row runs now; the mechanism for rows a build lacks stays.
        assert_eq!(ROWS.iter().filter(|r| r.unavailable().is_none()).count(), 13);
        assert_eq!(select_rows(&["nowa".into(), "- comp".into()]).unwrap().len(), 2);
        assert!(select_rows(&["no such row".into()]).is_err());
        for r in ROWS.iter().filter_map(|r| r.unavailable()) {
            assert!(r.starts_with("not yet implemented"), "{r}");
        }
        for s in [Scale::Tiny, Scale::Demo, Scale::Small, Scale::Full] {
            assert_eq!(Scale::parse(s.name()), Ok(s));
        }
    }

    #[test]
    fn tiny_table_runs_the_available_rows() {
        let rows = run(Scale::Tiny, &mut crate::progress::Silent, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), ROWS.len());
        let ran: Vec<_> = rows.iter().filter_map(|(_, r)| r.as_ref()).collect();
        assert_eq!(ran.len(), 13, "every row runs");
        let (dwb, plain, oop) = (&ran[0].summary, &ran[1].summary, &ran[2].summary);
        let comp = &ran[3].summary;
        // Compressed and packed: fewer DB bytes than user bytes, one read per page read.
        assert!(comp.db_waf.unwrap() < oop.db_waf.unwrap(), "{:?}", comp.db_waf);
        assert!(comp.compression_ratio.is_some_and(|r| r < 0.8), "{:?}", comp.compression_ratio);
        assert_eq!(comp.reads_per_page_read, Some(1.0));
        // Without packing some pages cross a slot's end and take two reads.
        let concatenated = &ran[4].summary;
        let reads = concatenated.reads_per_page_read.unwrap_or(0.0);
        assert!(reads > 1.0 && reads < 2.0, "unpacked reads per page read {reads}");
        assert_eq!(oop.compression_ratio, None);
        // Every page written back is written twice (doublewrite area, then in place), plus one
        // doublewrite header block per batch: 1/16 more with this scale's 16-page batches, a
        // little more for the short batches checkpoints write.
        assert!(dwb.bytes.doublewrite >= dwb.bytes.user, "{:?}", dwb.bytes);
        let dwb_waf = dwb.db_waf.unwrap();
        assert!((2.0..2.2).contains(&dwb_waf), "in-place DB WAF {dwb_waf}");
        assert!(dwb.ssd_waf.unwrap() > 1.0, "90% full after 2x: SSD GC");
        let plain_waf = plain.db_waf.unwrap();
        assert!((1.0..1.1).contains(&plain_waf), "no-doublewrite DB WAF {plain_waf}");
        // Out of place: DB GC copyback and no doublewrite.
        assert_eq!(oop.bytes.doublewrite, 0);
        assert!(oop.bytes.gc_copy > 0, "{:?}", oop.bytes);
        assert!(oop.db_waf.unwrap() > 1.2, "out-of-place DB WAF {:?}", oop.db_waf);
        // NoWA: the SSD's own GC copies less than without it (GDT, same zones), and with
        // zones aligned to its GC unit next to nothing.
        let (gdt, nowa, aligned) = (&ran[5].summary, &ran[7].summary, &ran[8].summary);
        let ssd = |s: &crate::metrics::Figures| s.ssd_waf.unwrap_or(f64::NAN);
        assert!(ssd(nowa) < ssd(gdt), "NoWA {} vs GDT {}", ssd(nowa), ssd(gdt));
        assert!(ssd(aligned) < 1.25, "aligned NoWA SSD WAF {}", ssd(aligned));
        // Values out of line: written as blob pages, still aligned. (Under the table's Sync
        // commits each commit writes its blobs' slot and map records: docs/internals/blobs.md.)
        let blobs = &ran[10].summary;
        assert!(blobs.bytes.blob > 0, "{:?}", blobs.bytes);
        assert!(ssd(blobs) < 1.25, "blob row SSD WAF {}", ssd(blobs));
        let text =
            crate::runner::table::render(&rows.into_iter().map(|(r, _)| r).collect::<Vec<_>>());
        assert!(!text.contains("not yet implemented"), "{text}");
    }

    #[test]
    fn paper_rows_print() {
        let text = render_paper_rows();
        assert!(text.contains("4.72"), "{text}"); // in-place total WAF 2.00 x 2.36
        assert_eq!(text.lines().count(), 2 + PAPER_ROWS.len());
    }
}
