//! End to end: YCSB-A on the engine over the tiny emulator preset, 90% full, until the DB has
//! written twice the device capacity; the report's figures must agree with each other.
#![allow(clippy::unwrap_used)]

use wafer_bench::metrics::{Figures, RunReport};
use wafer_bench::progress::Silent;
use wafer_bench::runner::{self, setup, BenchConfig};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn assert_consistent(f: &Figures) {
    let (db, ssd, total) = (f.db_waf.unwrap(), f.ssd_waf.unwrap(), f.total_waf.unwrap());
    assert!(close(total, db * ssd), "total {total} != {db} x {ssd}");
    let b = &f.bytes;
    assert!(close(f.logical_bytes_per_op.unwrap() * f.ops as f64, b.db_issued as f64));
    assert!(close(f.physical_bytes_per_op.unwrap() * f.ops as f64, b.flash as f64));
    assert_eq!(b.flash_host + b.ssd_gc + b.flash_padding, b.flash);
}

#[test]
fn ycsb_a_on_tiny_emulator_is_consistent() {
    // The tiny Table 1 scale's engine sizes (a doublewrite area and WAL that fit 8 MiB), at
    // this test's 90% fill, in the baseline write mode.
    let config = BenchConfig {
        fill: Some(0.9),
        until: Some("2x".into()),
        warmup: None,
        write_mode: Some("in-place".into()),
        ..wafer_bench::experiment::Scale::Tiny.base_config()
    };
    let prepared = setup::prepare(&config).unwrap();
    let capacity = prepared.target.data_device_capacity_bytes();
    let report =
        runner::run(prepared.target.as_ref(), &prepared.spec, prepared.setup, &mut Silent).unwrap();
    let text = report.to_json().unwrap();
    let report = RunReport::from_json(&text).unwrap();

    let s = &report.summary;
    assert_consistent(s);
    for r in &report.intervals {
        if r.interval.bytes.user > 0 && r.interval.bytes.db_issued > 0 {
            assert_consistent(&r.interval);
        }
    }
    // The stop condition: DB writes since the run began reached 2 capacities.
    assert!(s.bytes.db_issued >= 2 * capacity, "{} of {capacity}", s.bytes.db_issued);
    // Every page write is 4 KiB; the emulator saw every DB write (plus its GC).
    assert_eq!(s.bytes.db_issued % 4096, 0);
    assert!(s.bytes.flash_host >= s.bytes.db_issued);
    // 90% full and written over twice: the device had to collect garbage.
    assert!(s.bytes.ssd_gc > 0, "no SSD GC at 90% fill after 2x");
    assert!(s.ssd_waf.unwrap() > 1.0);
    let hit = s.buffer_hit_ratio.unwrap();
    assert!(hit > 0.0 && hit < 1.0, "{hit}");
    // The load inserted the estimate and topped up to 90% of the device.
    assert_eq!(report.load.unwrap().ops, report.observed["record_count"]);
    let planned = report.config["setup"]["sizing"]["record_count"].as_u64().unwrap();
    assert!(report.load.unwrap().ops >= planned);
    let fill = report.observed["target_before_run"]["fill"].as_f64().unwrap();
    assert!((0.9..0.92).contains(&fill), "fill {fill}");
    assert!(report.latency["read"].count > 0 && report.latency["update"].count > 0);
    print!("{}", runner::table::render_report(&report));
}

/// `--fill 0.9` on the smallest preset with the bench's own defaults, in both write modes: the
/// load fits and the run goes on (it once stopped at load with "out of space" out of place).
/// Out of place the fill is live pages over the zone space, which the report shows; a fill
/// that cannot fit is refused before anything is loaded, naming the largest that does.
#[test]
fn fill_90_percent_fits_the_tiny_preset_in_both_write_modes() {
    for mode in ["in-place", "out-of-place"] {
        let config = BenchConfig {
            device: Some("emu:tiny".into()),
            fill: Some(0.9),
            until: Some("1x".into()),
            threads: Some(1),
            write_mode: Some(mode.into()),
            ..BenchConfig::default()
        };
        let prepared = setup::prepare(&config).unwrap();
        let report =
            runner::run(prepared.target.as_ref(), &prepared.spec, prepared.setup, &mut Silent)
                .unwrap();
        assert!(report.summary.ops > 0, "{mode}");
        if mode == "out-of-place" {
            let live = report.summary.live_pages_per_zone_slot.unwrap();
            assert!((0.89..0.93).contains(&live), "live pages per zone slot {live}");
            assert!(report.summary.metadata_device_share.unwrap() < 0.02);
        }
        let too_full = BenchConfig { fill: Some(0.99), ..config };
        match setup::prepare(&too_full) {
            Err(e) => assert!(e.to_string().contains("largest fill that fits"), "{e}"),
            Ok(_) => panic!("{mode}: fill 0.99 accepted"),
        }
    }
}
