//! Every chart kind of the reports renders from fixed run reports (two tiny Table 1 runs in
//! tests/data) to a compressed PNG and to an SVG whose text is text; the HTML report built from
//! them is self-contained.
#![allow(clippy::unwrap_used)]

use wafer_harness::metrics::RunReport;
use wafer_plot::{render_png, render_svg, Chart};
use wafer_report::charts::{self, LatencyTimeline, VictimHistogram};
use wafer_report::{html, Document, PaperTable};

fn fixtures() -> Vec<RunReport> {
    ["run-in-place-tiny.json", "run-out-of-place-tiny.json"]
        .iter()
        .map(|name| {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
            RunReport::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
        })
        .collect()
}

/// plotters writes each text element's content on a line of its own, `>` escaped.
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{}\n</text>", text.replace('>', "&gt;")))
}

/// Width and height from the PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

/// Each chart kind with a label its SVG must show (a legend entry or a group name).
fn every_kind(runs: &[RunReport]) -> Vec<(Chart, &'static str)> {
    let timeline = |r: &RunReport| LatencyTimeline {
        label: r.label.clone(),
        points: r.intervals.iter().map(|i| (i.end_s, r.latency["all"])).collect(),
    };
    let victims = VictimHistogram {
        label: "greedy, 90% full".into(),
        counts: vec![0, 0, 0, 1, 4, 9, 14, 20, 16, 10, 6, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    };
    let doc = Document { paper: Some(PaperTable::table1_000()), ..Document::of_runs("t", runs) };
    let table_chart = doc.charts().into_iter().next().unwrap();
    vec![
        (charts::waf_per_configuration(runs), "in-place [tiny]"),
        (charts::waf_components(runs), "in-place [tiny]: SSD WAF"),
        (charts::write_drilldown(runs), "doublewrite"),
        (charts::throughput_over_time(runs), "-> out-of-place [tiny]"),
        (charts::latency_percentiles(runs), "p99.9"),
        (
            charts::latency_over_time(&runs.iter().map(timeline).collect::<Vec<_>>()),
            "in-place [tiny]: p99",
        ),
        (charts::victim_valid_cdf(&[victims]), "greedy, 90% full"),
        (table_chart, "000 (published)"),
    ]
}

#[test]
fn every_chart_kind_renders_to_png_and_svg() {
    let runs = fixtures();
    for (chart, label) in every_kind(&runs) {
        let png = render_png(&chart, (960, 540)).unwrap();
        assert_eq!(png_size(&png), (960, 540));
        assert!(png.len() < 200 << 10, "{}: {} bytes", chart.title(), png.len());
        let svg = render_svg(&chart, (960, 540)).unwrap();
        assert!(has_text(&svg, chart.title()), "{} not in its SVG", chart.title());
        assert!(has_text(&svg, label), "{label} not in the SVG of {}", chart.title());
    }
}

#[test]
fn charts_carry_the_fixture_data() {
    let runs = fixtures();
    let Chart::Line(waf) = charts::waf_per_configuration(&runs) else { panic!("a line chart") };
    assert_eq!(waf.series.len(), 2);
    // Interval total WAF of the in-place run: about 2 (doublewrite) x 2 (SSD GC).
    let first = waf.series[0].points[0];
    assert!((3.0..5.0).contains(&first.1), "{first:?}");
    let Chart::Bar(drill) = charts::write_drilldown(&runs) else { panic!("a bar chart") };
    assert!(drill.stacked);
    let per_op = |run: &RunReport, bytes: u64| bytes as f64 / run.summary.ops as f64;
    assert_eq!(drill.values[0][1], per_op(&runs[0], runs[0].summary.bytes.doublewrite));
    assert_eq!(drill.values[1][1], 0.0, "out of place writes no doublewrite copy");
    let Chart::Line(cdf) =
        charts::victim_valid_cdf(&[VictimHistogram { label: "v".into(), counts: vec![1, 0, 1] }])
    else {
        panic!("a line chart")
    };
    assert_eq!(cdf.series[0].points, vec![(50.0, 0.0), (50.0, 0.5), (100.0, 1.0)]);
}

#[test]
fn html_report_is_self_contained_with_paper_figures_beside() {
    let runs = fixtures();
    let page = html::render(&Document::of_runs("Tiny Table 1", &runs)).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // 000's published in-place row (total WAF 2.00 x 2.36) beside the measured one.
    assert!(page.contains("Measured beside published") && page.contains("4.72"));
    // Total WAF and flash bytes per operation beside the paper's; WAF over written capacity,
    // drilldown, throughput over time and latency percentiles of the runs.
    assert_eq!(page.matches("<svg").count(), 6);
    assert!(!page.contains("<script") && !page.contains("src="), "no external resource");
    let links: Vec<&str> =
        page.match_indices("href=\"").map(|(i, _)| &page[i + 6..i + 12]).collect();
    assert!(links.iter().all(|l| l.starts_with("data:")), "{links:?}");
    assert!(page.contains("Machine") && page.contains("CPUs available"));
    assert!(page.contains(&runs[0].config_hash), "each run's configuration");
}

/// Writes every kind as PNG and SVG for a look:
/// `cargo test -p wafer-report --test report_charts gallery -- --ignored --nocapture`.
#[test]
#[ignore]
fn gallery() {
    let dir = std::env::temp_dir().join("wafer-report-charts");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (chart, _)) in every_kind(&fixtures()).into_iter().enumerate() {
        let png = render_png(&chart, (960, 540)).unwrap();
        println!("{i}: {} ({} bytes PNG)", chart.title(), png.len());
        std::fs::write(dir.join(format!("{i}.png")), png).unwrap();
        std::fs::write(dir.join(format!("{i}.svg")), render_svg(&chart, (960, 540)).unwrap())
            .unwrap();
    }
}
