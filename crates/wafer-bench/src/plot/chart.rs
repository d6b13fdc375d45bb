//! Charts: line charts (several labelled (x, y) series) and grouped bar charts, laid out once and
//! drawn on any [`Surface`].
use super::surface::{series_color, text_width_px, Align, Rgb, Surface, TEXT_HEIGHT_PX};

/// One labelled line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Fixed y range; `None` = from min(0, data) to the data maximum, padded.
    pub y_range: Option<(f64, f64)>,
    /// Start the x axis at min(0, data) rather than at the first point.
    pub x_from_zero: bool,
}

/// Bars grouped by category: `values[group][series]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub series_labels: Vec<String>,
    pub values: Vec<Vec<f64>>,
}

/// Plot area inside the margins, in pixels.
#[derive(Debug, Clone, Copy)]
struct Frame {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
}

const MARGIN_LEFT_PX: f64 = 90.0;
const MARGIN_RIGHT_PX: f64 = 24.0;
const MARGIN_TOP_PX: f64 = 44.0;
const MARGIN_BOTTOM_PX: f64 = 64.0;
/// Upper bound on ticks per axis (the tick search never loops more).
const TICKS_MAX: usize = 12;

fn frame_of(surface: &dyn Surface) -> Frame {
    let (w, h) = (f64::from(surface.width()), f64::from(surface.height()));
    Frame {
        left: MARGIN_LEFT_PX,
        top: MARGIN_TOP_PX,
        right: (w - MARGIN_RIGHT_PX).max(MARGIN_LEFT_PX + 10.0),
        bottom: (h - MARGIN_BOTTOM_PX).max(MARGIN_TOP_PX + 10.0),
    }
}

/// Round tick positions covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    assert!((2..=TICKS_MAX).contains(&target));
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw_step = (hi - lo) / target as f64;
    let magnitude = 10f64.powf(raw_step.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| (hi - lo) / s <= target as f64)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil() * step;
    let mut ticks = Vec::with_capacity(TICKS_MAX + 1);
    for i in 0..=TICKS_MAX {
        let t = first + i as f64 * step;
        if t > hi + step * 1e-9 {
            break;
        }
        // Snap values like 0.30000000004 so labels print cleanly.
        ticks.push((t / step).round() * step);
    }
    ticks
}

/// Formats a tick value with as many decimals as the tick step needs.
pub fn format_tick(value: f64, step: f64) -> String {
    let decimals = if step > 0.0 && step < 1.0 { (-step.log10().floor()) as usize } else { 0 };
    let text = format!("{value:.decimals$}");
    if text == "-0" {
        "0".to_string()
    } else {
        text
    }
}

fn data_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for v in values.filter(|v| v.is_finite()) {
        range = Some(match range {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }
    range
}

/// Widens a degenerate range so a constant series still gets an axis.
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
    }
}

fn draw_title(surface: &mut dyn Surface, title: &str) {
    let x = f64::from(surface.width()) / 2.0;
    surface.text(x, MARGIN_TOP_PX / 2.0, title, Align::Center, false, Rgb::BLACK);
}

fn draw_y_axis(surface: &mut dyn Surface, frame: Frame, lo: f64, hi: f64, label: &str) {
    let ticks = nice_ticks(lo, hi, 6);
    let step = if ticks.len() > 1 { ticks[1] - ticks[0] } else { 1.0 };
    for &t in &ticks {
        let y = frame.bottom - (t - lo) / (hi - lo) * (frame.bottom - frame.top);
        surface.line(frame.left, y, frame.right, y, 1.0, Rgb::GRID);
        surface.line(frame.left - 5.0, y, frame.left, y, 1.0, Rgb::AXIS);
        surface.text(frame.left - 8.0, y, &format_tick(t, step), Align::Right, false, Rgb::AXIS);
    }
    let mid = (frame.top + frame.bottom) / 2.0;
    surface.text(18.0, mid, label, Align::Center, true, Rgb::BLACK);
}

fn draw_frame(surface: &mut dyn Surface, frame: Frame) {
    surface.line(frame.left, frame.bottom, frame.right, frame.bottom, 1.0, Rgb::AXIS);
    surface.line(frame.left, frame.top, frame.left, frame.bottom, 1.0, Rgb::AXIS);
}

const LEGEND_ROW_PX: f64 = TEXT_HEIGHT_PX as f64 + 8.0;

/// Pixels the legend takes from the top of the plot area (box, offset and a gap).
fn legend_height_px(rows: usize) -> f64 {
    if rows == 0 {
        0.0
    } else {
        LEGEND_ROW_PX * rows as f64 + 8.0 + 16.0
    }
}

/// Raises `hi` so the data stays below a legend of `rows` rows in the top of the frame.
fn headroom_for_legend(lo: f64, hi: f64, frame: Frame, rows: usize) -> f64 {
    let plot_px = frame.bottom - frame.top;
    let free_px = plot_px - legend_height_px(rows);
    if free_px < plot_px * 0.5 {
        // A legend that tall would squash the data: let it overlap instead.
        return hi;
    }
    lo + (hi - lo) * plot_px / free_px
}

/// Legend in the top-right corner of the plot area: a colour swatch and the label per series.
fn draw_legend(surface: &mut dyn Surface, frame: Frame, labels: &[String]) {
    let widest = labels.iter().map(|l| text_width_px(l)).max().unwrap_or(0);
    let row_px = LEGEND_ROW_PX;
    let box_w = f64::from(widest) + 40.0;
    let box_h = row_px * labels.len() as f64 + 8.0;
    let x = frame.right - box_w - 8.0;
    let y = frame.top + 8.0;
    surface.fill_rect(x, y, box_w, box_h, Rgb::WHITE);
    for (i, label) in labels.iter().enumerate() {
        let row_y = y + 4.0 + row_px * (i as f64 + 0.5);
        surface.fill_rect(x + 6.0, row_y - 4.0, 18.0, 8.0, series_color(i));
        surface.text(x + 30.0, row_y, label, Align::Left, false, Rgb::BLACK);
    }
}

impl LineChart {
    pub fn draw(&self, surface: &mut dyn Surface) {
        let frame = frame_of(surface);
        draw_title(surface, &self.title);
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let (x_lo, x_hi) = data_range(points().map(|p| p.0)).unwrap_or((0.0, 1.0));
        let x_lo = if self.x_from_zero { x_lo.min(0.0) } else { x_lo };
        let (x_lo, x_hi) = widen(x_lo, x_hi);
        let (y_lo, y_hi) = match self.y_range {
            Some(range) => range,
            None => {
                let (lo, hi) = data_range(points().map(|p| p.1)).unwrap_or((0.0, 1.0));
                let (lo, hi) = widen(lo.min(0.0), hi + (hi - lo.min(0.0)).abs() * 0.05);
                (lo, headroom_for_legend(lo, hi, frame, self.legend_rows()))
            }
        };
        let (y_lo, y_hi) = widen(y_lo, y_hi);
        draw_y_axis(surface, frame, y_lo, y_hi, &self.y_label);

        let x_ticks = nice_ticks(x_lo, x_hi, 8);
        let x_step = if x_ticks.len() > 1 { x_ticks[1] - x_ticks[0] } else { 1.0 };
        let to_x = |x: f64| frame.left + (x - x_lo) / (x_hi - x_lo) * (frame.right - frame.left);
        let to_y = |y: f64| {
            let y = y.clamp(y_lo, y_hi);
            frame.bottom - (y - y_lo) / (y_hi - y_lo) * (frame.bottom - frame.top)
        };
        for &t in &x_ticks {
            let x = to_x(t);
            surface.line(x, frame.top, x, frame.bottom, 1.0, Rgb::GRID);
            surface.line(x, frame.bottom, x, frame.bottom + 5.0, 1.0, Rgb::AXIS);
            let label = format_tick(t, x_step);
            surface.text(x, frame.bottom + 16.0, &label, Align::Center, false, Rgb::AXIS);
        }
        let x_title_y = f64::from(surface.height()) - 16.0;
        let x_mid = (frame.left + frame.right) / 2.0;
        surface.text(x_mid, x_title_y, &self.x_label, Align::Center, false, Rgb::BLACK);
        draw_frame(surface, frame);

        for (i, series) in self.series.iter().enumerate() {
            let color = series_color(i);
            let finite = series.points.iter().filter(|p| p.0.is_finite() && p.1.is_finite());
            let mut previous: Option<(f64, f64)> = None;
            for &(x, y) in finite {
                let point = (to_x(x), to_y(y));
                match previous {
                    Some((px, py)) => surface.line(px, py, point.0, point.1, 2.0, color),
                    None => surface.line(point.0, point.1, point.0, point.1, 2.0, color),
                }
                previous = Some(point);
            }
        }
        if self.legend_rows() > 0 {
            let labels: Vec<String> = self.series.iter().map(|s| s.label.clone()).collect();
            draw_legend(surface, frame, &labels);
        }
    }

    fn legend_rows(&self) -> usize {
        if self.series.len() > 1 || self.series.iter().any(|s| !s.label.is_empty()) {
            self.series.len()
        } else {
            0
        }
    }
}

impl BarChart {
    pub fn draw(&self, surface: &mut dyn Surface) {
        let frame = frame_of(surface);
        draw_title(surface, &self.title);
        let all = self.values.iter().flat_map(|g| g.iter().copied());
        let (lo, hi) = data_range(all).unwrap_or((0.0, 1.0));
        let (y_lo, y_hi) = widen(lo.min(0.0), hi.max(0.0) * 1.05);
        let y_hi = headroom_for_legend(y_lo, y_hi, frame, self.series_labels.len());
        draw_y_axis(surface, frame, y_lo, y_hi, &self.y_label);
        let to_y = |y: f64| frame.bottom - (y - y_lo) / (y_hi - y_lo) * (frame.bottom - frame.top);

        let groups = self.groups.len().max(1) as f64;
        let group_w = (frame.right - frame.left) / groups;
        let bars = self.series_labels.len().max(1) as f64;
        // Bars fill 80% of their group; the rest separates groups.
        let bar_w = group_w * 0.8 / bars;
        for (g, name) in self.groups.iter().enumerate() {
            let group_x = frame.left + group_w * g as f64;
            let values = self.values.get(g).map(Vec::as_slice).unwrap_or(&[]);
            for (s, &value) in values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
                let x = group_x + group_w * 0.1 + bar_w * s as f64;
                let (top, bottom) = (to_y(value.max(0.0)), to_y(value.min(0.0)));
                surface.fill_rect(x, top, bar_w.max(1.0), bottom - top, series_color(s));
            }
            let label_y = frame.bottom + 16.0;
            surface.text(group_x + group_w / 2.0, label_y, name, Align::Center, false, Rgb::AXIS);
        }
        draw_frame(surface, frame);
        if !self.series_labels.is_empty() {
            draw_legend(surface, frame, &self.series_labels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let ticks = nice_ticks(0.0, 1.0, 6);
        let expected = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
        assert_eq!(ticks.len(), expected.len());
        assert!(ticks.iter().zip(expected).all(|(t, e)| (t - e).abs() < 1e-12), "{ticks:?}");
        let ticks = nice_ticks(1.03, 3.9, 6);
        assert!(ticks.iter().all(|t| (1.03..=3.9).contains(t)));
        assert!(ticks.len() >= 3);
        assert_eq!(nice_ticks(5.0, 5.0, 6), vec![5.0]);
        assert_eq!(format_tick(0.30000000004, 0.1), "0.3");
        assert_eq!(format_tick(1500.0, 500.0), "1500");
    }
}
