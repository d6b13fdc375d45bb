//! Charts drawn with `plotters`: one description ([`Chart`]) rendered to a compressed PNG
//! (bitmap backend, DejaVu Sans through `ab_glyph`, anti-aliased) or to SVG (text kept as text).
//! The chart kinds the reports need are line charts (WAF over written capacity, throughput or
//! latency over time, CDFs) and bar charts, grouped (a table as a chart) or stacked (a write
//! drilldown in bytes per operation). Legends sit beside the plot, never over the data.
//!
//! ```
//! use wafer_plot::{Chart, LineChart, Series};
//! let chart = Chart::Line(LineChart {
//!     title: "WAF".into(),
//!     x_label: "host writes / capacity".into(),
//!     y_label: "WAF".into(),
//!     series: vec![Series::new("interval", vec![(0.0, 1.0), (1.0, 2.5)])],
//!     ..LineChart::default()
//! });
//! let png = wafer_plot::render_png(&chart, (640, 400)).unwrap();
//! assert_eq!(&png[1..4], b"PNG");
//! let svg = wafer_plot::render_svg(&chart, (640, 400)).unwrap();
//! assert!(svg.contains("interval"));
//! ```
mod chart;
mod draw;
mod encode;
mod error;
mod font;
mod text;

pub use chart::{BarChart, Chart, LineChart, Series};
pub use error::PlotError;

const SIZE_MIN_PX: (u32, u32) = (200, 150);
const SIZE_MAX_PX: u32 = 8000;

fn check_size((width, height): (u32, u32)) -> Result<(), PlotError> {
    let fits = |v: u32, min: u32| (min..=SIZE_MAX_PX).contains(&v);
    if fits(width, SIZE_MIN_PX.0) && fits(height, SIZE_MIN_PX.1) {
        Ok(())
    } else {
        Err(PlotError::Size(width, height))
    }
}

/// The chart as a PNG file's bytes.
pub fn render_png(chart: &Chart, size_px: (u32, u32)) -> Result<Vec<u8>, PlotError> {
    check_size(size_px)?;
    font::register();
    let mut rgb = vec![0u8; size_px.0 as usize * size_px.1 as usize * 3];
    {
        let backend = plotters::backend::BitMapBackend::with_buffer(&mut rgb, size_px);
        draw::chart(text::AaText(backend), chart)?;
    }
    encode::png_rgb(&rgb, size_px)
}

/// The chart as an SVG document (no XML prolog, so it can also be inlined in HTML).
pub fn render_svg(chart: &Chart, size_px: (u32, u32)) -> Result<String, PlotError> {
    check_size(size_px)?;
    // Text is laid out with the font's metrics even though the SVG keeps it as text.
    font::register();
    let mut svg = String::new();
    {
        let backend = plotters::backend::SVGBackend::with_string(&mut svg, size_px);
        draw::chart(backend, chart)?;
    }
    Ok(svg)
}

/// Renders to the format a file name asks for: `.svg` gives SVG, anything else PNG.
pub fn render_for_path(
    chart: &Chart,
    path: &std::path::Path,
    size_px: (u32, u32),
) -> Result<Vec<u8>, PlotError> {
    if is_svg_path(path) {
        Ok(render_svg(chart, size_px)?.into_bytes())
    } else {
        render_png(chart, size_px)
    }
}

/// Which encoder a file name asks for: `.svg` gives SVG, anything else PNG.
pub fn is_svg_path(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"))
}

/// Points of an empirical CDF from weighted values (e.g. a histogram's bucket upper edges and
/// counts): (x, fraction of the weight at or below x), ascending in x, starting at (first x, 0)
/// so the curve rises from the axis. Empty when the weights sum to zero.
pub fn cdf_points(weighted: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<(f64, f64)> =
        weighted.iter().copied().filter(|(x, w)| x.is_finite() && *w > 0.0).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = sorted.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut points = Vec::with_capacity(sorted.len() + 1);
    points.push((sorted[0].0, 0.0));
    let mut seen = 0.0;
    for (x, w) in sorted {
        seen += w;
        points.push((x, seen / total));
    }
    points
}

#[cfg(test)]
mod tests;
