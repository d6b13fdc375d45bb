//! Lays a [`Chart`] out on any plotters backend: the title on top, the legend in a column right
//! of the plot (outside the data), axis descriptions with units, light grid lines.
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{BarChart, Chart, LineChart};
use crate::error::PlotError;

/// Tableau 10: distinct hues that stay apart in print and for the common colour blindnesses.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GRID_LIGHT: RGBColor = RGBColor(236, 236, 236);
const GRID_BOLD: RGBColor = RGBColor(214, 214, 214);
const TEXT: RGBColor = RGBColor(30, 30, 30);

const TITLE_PX: f64 = 20.0;
const LABEL_PX: f64 = 14.0;
const DESC_PX: f64 = 15.0;
const LEGEND_ROW_PX: i32 = 22;
/// Series with at most this many points get a marker per point.
const MARKED_POINTS_MAX: usize = 40;
/// Legend column: swatch, gap, then the label.
const LEGEND_TEXT_X_PX: i32 = 34;

pub(crate) fn series_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn font(size_px: f64, style: FontStyle) -> TextStyle<'static> {
    TextStyle::from(FontDesc::new(FontFamily::SansSerif, size_px, style)).color(&TEXT)
}

fn err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Draw(e.to_string())
}

pub(crate) fn chart<DB: DrawingBackend>(backend: DB, chart: &Chart) -> Result<(), PlotError> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    match chart {
        Chart::Line(c) => line_chart(&root, c)?,
        Chart::Bar(c) => bar_chart(&root, c)?,
    }
    root.present().map_err(err)
}

/// Tick text: at most three decimals with trailing zeros cut, thousands and millions
/// abbreviated (the axis description carries the unit).
pub(crate) fn format_tick(value: f64) -> String {
    let abs = value.abs();
    let (scaled, suffix) = if abs >= 1e9 {
        (value / 1e9, "G")
    } else if abs >= 1e6 {
        (value / 1e6, "M")
    } else if abs >= 1e5 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let text = format!("{scaled:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    let text = if text == "-0" { "0" } else { text };
    format!("{text}{suffix}")
}

type Area<DB> = DrawingArea<DB, Shift>;

/// Splits the area under the title into the plot and, when there are labels, a legend column
/// as wide as the longest label (at most 40% of the width).
fn split_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
) -> Result<(Area<DB>, Option<Area<DB>>), PlotError> {
    let body = root.titled(title, font(TITLE_PX, FontStyle::Bold)).map_err(err)?;
    if labels.is_empty() {
        return Ok((body, None));
    }
    let label_font = font(LABEL_PX, FontStyle::Normal);
    let mut widest_px = 0u32;
    for label in labels {
        widest_px = widest_px.max(root.estimate_text_size(label, &label_font).map_err(err)?.0);
    }
    let width_px = body.dim_in_pixel().0;
    let legend_px = (widest_px + LEGEND_TEXT_X_PX as u32 + 16).min(width_px * 2 / 5);
    let (plot, legend) = body.split_horizontally(width_px.saturating_sub(legend_px));
    Ok((plot, Some(legend)))
}

#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Box,
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: &[String],
    swatch: Swatch,
) -> Result<(), PlotError> {
    let style = font(LABEL_PX, FontStyle::Normal).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, label) in labels.iter().enumerate() {
        // Aligned with the top of the plot area (below the chart's inner margin).
        let y = 24 + LEGEND_ROW_PX * i as i32;
        let color = series_color(i);
        match swatch {
            Swatch::Line => {
                let path = PathElement::new(vec![(4, y), (26, y)], color.stroke_width(3));
                area.draw(&path).map_err(err)?;
            }
            Swatch::Box => {
                let rect = Rectangle::new([(6, y - 6), (24, y + 6)], color.filled());
                area.draw(&rect).map_err(err)?;
            }
        }
        area.draw(&Text::new(label.clone(), (LEGEND_TEXT_X_PX, y), style.clone())).map_err(err)?;
    }
    Ok(())
}

fn data_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.filter(|v| v.is_finite()).fold(None, |range, v| match range {
        None => Some((v, v)),
        Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
    })
}

/// Widens a degenerate range so a constant series still gets an axis.
fn widen((lo, hi): (f64, f64)) -> (f64, f64) {
    if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
    }
}

fn line_ranges(c: &LineChart) -> ((f64, f64), (f64, f64)) {
    let points = || c.series.iter().flat_map(|s| s.points.iter());
    let (x_lo, x_hi) = data_range(points().map(|p| p.0)).unwrap_or((0.0, 1.0));
    let x_lo = if c.x_from_zero { x_lo.min(0.0) } else { x_lo };
    // A little room right of the last point, so its marker is not cut by the frame.
    let x_hi = x_hi + (x_hi - x_lo).abs() * 0.02;
    let y = match c.y_range {
        Some(range) => range,
        None => {
            let (lo, hi) = data_range(points().map(|p| p.1)).unwrap_or((0.0, 1.0));
            let lo = lo.min(0.0);
            (lo, hi + (hi - lo).abs() * 0.05)
        }
    };
    (widen((x_lo, x_hi)), widen(y))
}

fn line_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &LineChart,
) -> Result<(), PlotError> {
    let labels: Vec<String> = c.series.iter().map(|s| s.label.clone()).collect();
    let labelled = c.series.len() > 1 || labels.iter().any(|l| !l.is_empty());
    let (plot, legend) = split_legend(root, &c.title, if labelled { &labels } else { &[] })?;
    let ((x_lo, x_hi), (y_lo, y_hi)) = line_ranges(c);
    let mut chart = ChartBuilder::on(&plot)
        .margin(14)
        .x_label_area_size(52)
        .y_label_area_size(76)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .x_labels(8)
        .y_labels(10)
        .x_label_formatter(&|v| format_tick(*v))
        .y_label_formatter(&|v| format_tick(*v))
        .label_style(font(LABEL_PX, FontStyle::Normal))
        .axis_desc_style(font(DESC_PX, FontStyle::Normal))
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD)
        .draw()
        .map_err(err)?;
    for (i, series) in c.series.iter().enumerate() {
        // Clamped into the y range: plotters does not clip lines at the plot's edge.
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(x, y)| (x, y.clamp(y_lo, y_hi)))
            .collect();
        let color = series_color(i);
        if points.len() <= MARKED_POINTS_MAX {
            // Sparse series (a short run's few intervals, a single point) stay visible.
            let marks = points.iter().map(|&p| Circle::new(p, 3, color.filled()));
            chart.draw_series(marks).map_err(err)?;
        }
        chart.draw_series(LineSeries::new(points, color.stroke_width(2))).map_err(err)?;
    }
    if let Some(area) = legend {
        draw_legend(&area, &labels, Swatch::Line)?;
    }
    Ok(())
}

/// The y range of the bars: stacked bars reach the sum of a group's positive parts.
fn bar_range(c: &BarChart) -> (f64, f64) {
    let finite = |v: &&f64| v.is_finite();
    let (lo, hi) = if c.stacked {
        let sums = c.values.iter().flat_map(|g| {
            let pos: f64 = g.iter().filter(finite).filter(|v| **v > 0.0).sum();
            let neg: f64 = g.iter().filter(finite).filter(|v| **v < 0.0).sum();
            [pos, neg]
        });
        data_range(sums).unwrap_or((0.0, 1.0))
    } else {
        data_range(c.values.iter().flatten().copied()).unwrap_or((0.0, 1.0))
    };
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    widen((lo, hi + (hi - lo) * 0.05))
}

/// Rectangles of group `g`: (x from, x to, y from, y to, series index).
fn group_bars(c: &BarChart, g: usize) -> Vec<(f64, f64, f64, f64, usize)> {
    let values = c.values.get(g).map(Vec::as_slice).unwrap_or(&[]);
    let left = g as f64;
    let mut out = Vec::with_capacity(values.len());
    if c.stacked {
        let (mut up, mut down) = (0.0, 0.0);
        for (s, &v) in values.iter().enumerate().filter(|(_, v)| v.is_finite() && **v != 0.0) {
            let base = if v > 0.0 { &mut up } else { &mut down };
            out.push((left + 0.2, left + 0.8, *base, *base + v, s));
            *base += v;
        }
    } else {
        // Bars fill 80% of their group; the rest separates groups.
        let width = 0.8 / c.series_labels.len().max(values.len()).max(1) as f64;
        for (s, &v) in values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
            let x = left + 0.1 + width * s as f64;
            out.push((x, x + width * 0.92, 0.0, v, s));
        }
    }
    out
}

#[cfg(test)]
pub(crate) fn group_bars_for_test(c: &BarChart, g: usize) -> Vec<(f64, f64, f64, f64, usize)> {
    group_bars(c, g)
}

/// Greedy word wrap of a group name into lines of at most `width_chars` characters.
fn wrap(text: &str, width_chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width_chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn bar_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &BarChart,
) -> Result<(), PlotError> {
    let (plot, legend) = split_legend(root, &c.title, &c.series_labels)?;
    let groups = c.groups.len().max(1);
    // About 7.5 pixels per character of the label font.
    let group_px = plot.dim_in_pixel().0.saturating_sub(100) as f64 / groups as f64;
    let names: Vec<Vec<String>> =
        c.groups.iter().map(|g| wrap(g, ((group_px / 7.5) as usize).max(4))).collect();
    let name_rows = names.iter().map(Vec::len).max().unwrap_or(1) as u32;
    let (y_lo, y_hi) = bar_range(c);
    let mut chart = ChartBuilder::on(&plot)
        .margin(14)
        .x_label_area_size(16 + 18 * name_rows)
        .y_label_area_size(76)
        .build_cartesian_2d(0.0..groups as f64, y_lo..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(c.y_label.as_str())
        .y_labels(10)
        .y_label_formatter(&|v| format_tick(*v))
        .label_style(font(LABEL_PX, FontStyle::Normal))
        .axis_desc_style(font(DESC_PX, FontStyle::Normal))
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD)
        .draw()
        .map_err(err)?;
    let rects = (0..c.groups.len()).flat_map(|g| group_bars(c, g)).map(|(x0, x1, y0, y1, s)| {
        Rectangle::new(
            [(x0, y0.clamp(y_lo, y_hi)), (x1, y1.clamp(y_lo, y_hi))],
            series_color(s).filled(),
        )
    });
    chart.draw_series(rects).map_err(err)?;
    let style = font(LABEL_PX, FontStyle::Normal).pos(Pos::new(HPos::Center, VPos::Top));
    for (g, lines) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(g as f64 + 0.5, y_lo));
        for (row, line) in lines.iter().enumerate() {
            let at = (x, y + 8 + 18 * row as i32);
            root.draw(&Text::new(line.clone(), at, style.clone())).map_err(err)?;
        }
    }
    if let Some(area) = legend {
        draw_legend(&area, &c.series_labels, Swatch::Box)?;
    }
    Ok(())
}
