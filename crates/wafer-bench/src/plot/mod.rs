//! Charts without plotting dependencies: a raster canvas with a bitmap font encoded as PNG by a
//! small encoder of our own, and an SVG writer, both behind one [`Surface`] so a chart is laid
//! out once.
//!
//! ```
//! use wafer_bench::plot::{LineChart, Series};
//! let chart = LineChart {
//!     title: "WAF".into(),
//!     x_label: "host writes / capacity".into(),
//!     y_label: "WAF".into(),
//!     series: vec![Series::new("interval", vec![(0.0, 1.0), (1.0, 2.5)])],
//!     y_range: None,
//!     x_from_zero: true,
//! };
//! let png = wafer_bench::plot::line_chart_png(&chart, 640, 400);
//! assert_eq!(&png[1..4], b"PNG");
//! ```
pub mod canvas;
pub mod chart;
pub mod font;
pub mod png;
pub mod surface;
pub mod svg;

pub use canvas::Canvas;
pub use chart::{BarChart, LineChart, Series};
pub use surface::{Rgb, Surface};
pub use svg::Svg;

pub fn line_chart_png(chart: &LineChart, width: u32, height: u32) -> Vec<u8> {
    let mut canvas = Canvas::new(width, height, Rgb::WHITE);
    chart.draw(&mut canvas);
    canvas.to_png()
}

pub fn line_chart_svg(chart: &LineChart, width: u32, height: u32) -> String {
    let mut svg = Svg::new(width, height, Rgb::WHITE);
    chart.draw(&mut svg);
    svg.finish()
}

pub fn bar_chart_png(chart: &BarChart, width: u32, height: u32) -> Vec<u8> {
    let mut canvas = Canvas::new(width, height, Rgb::WHITE);
    chart.draw(&mut canvas);
    canvas.to_png()
}

pub fn bar_chart_svg(chart: &BarChart, width: u32, height: u32) -> String {
    let mut svg = Svg::new(width, height, Rgb::WHITE);
    chart.draw(&mut svg);
    svg.finish()
}

/// Which encoder a file name asks for: `.svg` gives SVG, anything else PNG.
pub fn is_svg_path(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_render_to_both_formats() {
        let chart = LineChart {
            title: "WAF over written capacity".into(),
            x_label: "host writes / capacity".into(),
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
        };
        let png = line_chart_png(&chart, 320, 200);
        assert_eq!(&png[..8], &png::SIGNATURE);
        let svg = line_chart_svg(&chart, 320, 200);
        assert!(svg.contains("cumulative"));

        let bars = BarChart {
            title: "write drilldown".into(),
            y_label: "bytes/op".into(),
            groups: vec!["in-place".into(), "out-of-place".into()],
            series_labels: vec!["user".into(), "gc".into()],
            values: vec![vec![4096.0, 100.0], vec![2000.0, 300.0]],
        };
        let mut canvas = Canvas::new(320, 200, Rgb::WHITE);
        bars.draw(&mut canvas);
        // Some pixel carries the first series colour.
        let first = surface::series_color(0);
        let found = (0..200).any(|y| (0..320).any(|x| canvas.pixel(x, y) == first));
        assert!(found);
        assert!(bar_chart_svg(&bars, 320, 200).contains("<rect"));
    }

    /// Writes sample charts for a visual check:
    /// `cargo test -p wafer-bench plot_gallery -- --ignored`, then open $TMPDIR/wafer-plot-*.
    #[test]
    #[ignore]
    #[allow(clippy::unwrap_used)]
    fn plot_gallery() {
        let dir = std::env::temp_dir();
        let bars = BarChart {
            title: "Write drilldown (bytes per op)".into(),
            y_label: "bytes / op".into(),
            groups: vec!["in-place".into(), "+compress".into(), "+GDT".into(), "+NoWA".into()],
            series_labels: vec!["user".into(), "doublewrite".into(), "DB GC".into()],
            values: vec![
                vec![4096.0, 4096.0, 0.0],
                vec![1800.0, 0.0, 900.0],
                vec![1800.0, 0.0, 400.0],
                vec![1800.0, 0.0, 120.0],
            ],
        };
        std::fs::write(dir.join("wafer-plot-bars.png"), bar_chart_png(&bars, 800, 480)).unwrap();
        std::fs::write(dir.join("wafer-plot-bars.svg"), bar_chart_svg(&bars, 800, 480)).unwrap();
    }
}
