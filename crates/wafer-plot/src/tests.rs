use super::draw::format_tick;
use super::*;

fn line() -> Chart {
    Chart::Line(LineChart {
        title: "WAF over written capacity".into(),
        x_label: "DB writes / device capacity".into(),
        y_label: "WAF".into(),
        series: vec![
            Series::new(
                "interval",
                (0..50).map(|i| (f64::from(i) / 10.0, 1.0 + f64::from(i % 7) / 3.0)).collect(),
            ),
            Series::new("cumulative", (0..50).map(|i| (f64::from(i) / 10.0, 1.5)).collect()),
        ],
        y_range: None,
        x_from_zero: true,
    })
}

fn bars(stacked: bool) -> Chart {
    Chart::Bar(BarChart {
        title: "Write drilldown".into(),
        y_label: "bytes per operation (B/op)".into(),
        groups: vec!["in-place".into(), "(in-place, no doublewrite)".into()],
        series_labels: vec!["user".into(), "doublewrite".into()],
        values: vec![vec![4096.0, 4096.0], vec![4000.0, 0.0]],
        stacked,
    })
}

/// PNG signature, then IHDR's width and height (big-endian) at bytes 16..24.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let word = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (word(16), word(20))
}

/// plotters writes each text element's content on a line of its own.
pub(crate) fn svg_has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>")) || svg.contains(&format!(">{text}</text>"))
}

#[test]
fn every_kind_renders_to_compressed_png_and_svg_with_text() {
    for chart in [line(), bars(false), bars(true)] {
        let png = render_png(&chart, (960, 600)).unwrap();
        assert_eq!(png_size(&png), (960, 600));
        // Uncompressed RGB would be 1.7 MB.
        assert!(png.len() < 200 << 10, "{}: {} bytes", chart.title(), png.len());
        let svg = render_svg(&chart, (960, 600)).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg_has_text(&svg, chart.title()), "title as text");
    }
    let svg = render_svg(&bars(true), (960, 600)).unwrap();
    // Legend labels and the y description are text, in mixed case.
    assert!(svg_has_text(&svg, "doublewrite"));
    assert!(svg_has_text(&svg, "bytes per operation (B/op)"));
    assert!(svg_has_text(&svg, "in-place"), "group names under the bars");
}

#[test]
fn stacked_bars_stack_and_grouped_bars_sit_side_by_side() {
    let Chart::Bar(mut c) = bars(true) else { unreachable!() };
    let stacked = draw::group_bars_for_test(&c, 0);
    assert_eq!(stacked, vec![(0.2, 0.8, 0.0, 4096.0, 0), (0.2, 0.8, 4096.0, 8192.0, 1)]);
    c.stacked = false;
    let grouped = draw::group_bars_for_test(&c, 1);
    assert_eq!(grouped.len(), 2);
    assert!(grouped[0].1 <= grouped[1].0, "{grouped:?}");
    assert_eq!((grouped[0].2, grouped[0].3), (0.0, 4000.0));
}

#[test]
fn sizes_out_of_range_are_errors_not_panics() {
    assert!(matches!(render_png(&line(), (10, 10)), Err(PlotError::Size(10, 10))));
    assert!(matches!(render_svg(&line(), (9000, 600)), Err(PlotError::Size(9000, 600))));
}

#[test]
fn empty_charts_still_render() {
    let empty = Chart::Line(LineChart { title: "nothing yet".into(), ..LineChart::default() });
    assert!(render_svg(&empty, (400, 300)).unwrap().contains("nothing yet"));
    let no_bars = Chart::Bar(BarChart::default());
    assert!(!render_png(&no_bars, (400, 300)).unwrap().is_empty());
}

#[test]
fn cdf_rises_from_zero_to_one_in_x_order() {
    let cdf = cdf_points(&[(1.0, 1.0), (0.5, 3.0), (0.75, 0.0), (f64::NAN, 9.0)]);
    assert_eq!(cdf, vec![(0.5, 0.0), (0.5, 0.75), (1.0, 1.0)]);
    assert!(cdf_points(&[(1.0, 0.0)]).is_empty());
}

#[test]
fn ticks_are_short() {
    assert_eq!(format_tick(0.30000000004), "0.3");
    assert_eq!(format_tick(4096.0), "4096");
    assert_eq!(format_tick(250_000.0), "250k");
    assert_eq!(format_tick(2_500_000.0), "2.5M");
    assert_eq!(format_tick(-0.0001), "0");
    assert_eq!(format_tick(1.25), "1.25");
}

/// Writes sample charts for a visual check:
/// `cargo test -p wafer-plot plot_gallery -- --ignored`, then open $TMPDIR/wafer-plot-*.
#[test]
#[ignore]
fn plot_gallery() {
    let dir = std::env::temp_dir();
    for (name, chart) in [("line", line()), ("grouped", bars(false)), ("stacked", bars(true))] {
        let png = render_png(&chart, (960, 600)).unwrap();
        std::fs::write(dir.join(format!("wafer-plot-{name}.png")), png).unwrap();
        let svg = render_svg(&chart, (960, 600)).unwrap();
        std::fs::write(dir.join(format!("wafer-plot-{name}.svg")), svg).unwrap();
    }
}
