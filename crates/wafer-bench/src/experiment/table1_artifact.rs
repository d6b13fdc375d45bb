//! `wafer experiment table1 --variant artifact`: Table 1's out-of-place rows with 000's
//! artifact's (ZLeanStore's) GC and placement choices and its YCSB, to see whether they explain
//! the GDT gain 000 Figure 13c shows (4.02 -> 3.36, -16%, without compression) and ours lacks.
//! Each choice runs alone and all together, each time with and without GDT, and the gain is
//! reported in both DB WAF metrics (bytes, and the artifact's victim formula).
use wafer::options::ArtifactOptions;

use super::table1::{self, ExperimentError, RowSetup, Scale};
use crate::metrics::RunReport;
use crate::progress::Progress;
use crate::runner::engine::WriteModeChoice;
use crate::runner::setup::BenchConfig;
use crate::runner::table::Row;

/// 000 Figure 13c: DB WAF without compression, out of place, then with GDT.
pub const PAPER_GDT_DB_WAF: (f64, f64) = (4.02, 3.36);

/// The artifact's YCSB runs at this fill of the sizing estimate: the pilot sizes records from
/// random inserts, and ordered inserts leave emptier leaves, so 0.6 gives live pages on 87.7%
/// of the zone slots at demo scale (000: 90%); 0.7 and above run out of page ids in the load.
pub const ARTIFACT_FILL: f64 = 0.6;

/// A set of artifact options the rows run with, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSet {
    pub name: &'static str,
    pub options: ArtifactOptions,
    /// The set changes placement only with GDT (batch_one_zone, lsn_history): its plain
    /// out-of-place row would equal the set "none"'s and is not run.
    pub gdt_only: bool,
}

const fn set(name: &'static str, flags: [bool; 6], gdt_only: bool) -> OptionSet {
    let [gc_burst, trim_off, gc_with_user, batch_one_zone, lsn_history, gc_in_pool] = flags;
    let options = ArtifactOptions {
        gc_burst,
        trim_off,
        gc_with_user,
        batch_one_zone,
        lsn_history,
        gc_in_pool,
    };
    OptionSet { name, options, gdt_only }
}

/// None, each choice alone, all together, and all but GC through the pool (the earlier "all",
/// so the one run shows what survivors held in the pool change).
pub const SETS: [OptionSet; 9] = [
    set("none", [false; 6], false),
    set("gc_burst", [true, false, false, false, false, false], false),
    set("trim_off", [false, true, false, false, false, false], false),
    set("gc_with_user", [false, false, true, false, false, false], false),
    set("batch_one_zone", [false, false, false, true, false, false], true),
    set("lsn_history", [false, false, false, false, true, false], true),
    set("gc_in_pool", [false, false, false, false, false, true], false),
    set("all", [true; 6], false),
    set("all but gc_in_pool", [true, true, true, true, true, false], false),
];

/// One row: an option set on Table 1's naive or GDT out-of-place row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactRow {
    pub set: OptionSet,
    /// GDT (Table 1's "+ GDT (no comp.)" setup) or plain ("-> out-of-place").
    pub gdt: bool,
}

impl ArtifactRow {
    pub fn label(&self) -> String {
        let base = if self.gdt { "+ GDT (no comp.)" } else { "-> out-of-place" };
        format!("{base} [{}]", self.set.name)
    }

    /// Table 1's row config at `scale`, on the artifact's YCSB, with the set's options.
    pub fn config(&self, scale: Scale) -> BenchConfig {
        let setup = if self.gdt { RowSetup::GdtUncompressed } else { RowSetup::NaiveOutOfPlace };
        let plan = table1::row("artifact", WriteModeChoice::OutOfPlace, setup);
        let mut c = plan.config(scale);
        c.label = Some(format!("{} [{}]", self.label(), scale.name()));
        // 000's artifact's YCSB: ordered keys, the zipf rank as the key, 120-byte values.
        c.preset = Some("zleanstore".into());
        c.value_size = None;
        c.fill = Some(ARTIFACT_FILL);
        let o = self.set.options;
        let flags = [
            ("gc_burst", o.gc_burst),
            ("trim_off", o.trim_off),
            ("gc_with_user", o.gc_with_user),
            ("batch_one_zone", o.batch_one_zone),
            ("lsn_history", o.lsn_history),
            ("gc_in_pool", o.gc_in_pool),
        ];
        for (key, on) in flags {
            c.engine.insert(key.into(), toml::Value::Boolean(on));
        }
        c
    }
}

/// Every row: per set its plain row (unless GDT-only) and its GDT row.
pub fn rows() -> Vec<ArtifactRow> {
    let mut out = Vec::with_capacity(2 * SETS.len());
    for set in SETS {
        if !set.gdt_only {
            out.push(ArtifactRow { set, gdt: false });
        }
        out.push(ArtifactRow { set, gdt: true });
    }
    out
}

/// Runs the rows in order; `on_row` sees each finished one.
pub fn run(
    scale: Scale,
    plans: &[ArtifactRow],
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(ArtifactRow, Row, RunReport)>, ExperimentError> {
    let mut out = Vec::with_capacity(plans.len());
    for plan in plans {
        let (mut row, report) =
            table1::run_config("artifact variant", &plan.config(scale), progress)?;
        row.label = plan.label();
        on_row(&row);
        out.push((*plan, row, report));
    }
    Ok(out)
}

/// GDT's change of DB WAF per set, in bytes and in the victim metric: (before, after).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gain {
    pub set: &'static str,
    pub bytes: Option<(f64, f64)>,
    pub victim: Option<(f64, f64)>,
    /// Live pages per zone slot of both runs: an ordered load's leaf fill depends on how its
    /// two threads interleave, so two rows can hold the same records in different page counts
    /// (a gain between rows of different density is not GDT's).
    pub live: Option<(f64, f64)>,
}

impl Gain {
    fn percent(pair: Option<(f64, f64)>) -> Option<f64> {
        pair.filter(|(b, _)| *b > 0.0).map(|(b, a)| (a / b - 1.0) * 100.0)
    }
}

/// Per set, GDT's row against the plain row (set "none"'s for the GDT-only sets).
pub fn gains(results: &[(ArtifactRow, Row, RunReport)]) -> Vec<Gain> {
    let find = |name: &str, gdt: bool| {
        results
            .iter()
            .find(|(r, _, _)| r.set.name == name && r.gdt == gdt)
            .map(|(_, _, rep)| &rep.summary)
    };
    let mut out = Vec::with_capacity(SETS.len());
    for set in SETS {
        let plain = find(if set.gdt_only { "none" } else { set.name }, false);
        let (Some(plain), Some(gdt)) = (plain, find(set.name, true)) else { continue };
        let both = |f: fn(&crate::metrics::Figures) -> Option<f64>| f(plain).zip(f(gdt));
        out.push(Gain {
            set: set.name,
            bytes: both(|f| f.db_waf),
            victim: both(|f| f.db_waf_victim),
            live: both(|f| f.live_pages_per_zone_slot),
        });
    }
    out
}

/// The gains as a markdown table, 000's beside each.
pub fn render_gains(gains: &[Gain]) -> String {
    use std::fmt::Write as _;
    let (paper_before, paper_after) = PAPER_GDT_DB_WAF;
    let paper = (paper_after / paper_before - 1.0) * 100.0;
    let mut out = String::from(
        "| options | DB WAF bytes: plain -> GDT | gain | DB WAF vict.: plain -> GDT | gain | \
         live pages / zone slot | 000 Fig. 13c |\n|---|---|--:|---|--:|---|---|\n",
    );
    let pair =
        |p: Option<(f64, f64)>| p.map_or("-".to_string(), |(b, a)| format!("{b:.2} -> {a:.2}"));
    let pct =
        |p: Option<(f64, f64)>| Gain::percent(p).map_or("-".to_string(), |g| format!("{g:+.1}%"));
    for g in gains {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {paper_before:.2} -> {paper_after:.2} ({paper:+.0}%) |",
            g.set,
            pair(g.bytes),
            pct(g.bytes),
            pair(g.victim),
            pct(g.victim),
            pair(g.live)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_cover_every_set_with_and_without_gdt() {
        let rows = rows();
        assert_eq!(rows.len(), 2 * SETS.len() - 2, "GDT-only sets have no plain row");
        let all = rows.iter().find(|r| r.set.name == "all" && r.gdt).unwrap();
        let c = all.config(Scale::Tiny);
        assert_eq!(c.preset.as_deref(), Some("zleanstore"));
        assert_eq!(c.engine.get("placement").and_then(|v| v.as_str()), Some("gdt"));
        let keys =
            ["gc_burst", "trim_off", "gc_with_user", "batch_one_zone", "lsn_history", "gc_in_pool"];
        for key in keys {
            assert_eq!(c.engine.get(key).and_then(|v| v.as_bool()), Some(true), "{key}");
        }
        let none = rows.iter().find(|r| r.set.name == "none" && !r.gdt).unwrap();
        assert_eq!(
            none.config(Scale::Tiny).engine.get("gc_burst"),
            Some(&toml::Value::Boolean(false))
        );
        assert_eq!(SETS.iter().filter(|s| s.name == "all").count(), 1);
        assert_eq!(SETS[7].options, ArtifactOptions::all());
        let direct = ArtifactOptions { gc_in_pool: false, ..ArtifactOptions::all() };
        assert_eq!(SETS[8].options, direct);
    }

    #[test]
    fn gains_render_beside_the_paper() {
        let g = Gain { set: "all", bytes: Some((4.0, 3.6)), victim: Some((4.3, 4.3)), live: None };
        let text = render_gains(&[g]);
        assert!(text.contains("4.00 -> 3.60 | -10.0%"), "{text}");
        assert!(text.contains("4.02 -> 3.36 (-16%)"), "{text}");
    }
}
