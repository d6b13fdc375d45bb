//! The description of a chart, what the renderers draw: a leaf, so the drawing code names it
//! without naming the crate root that calls into it.

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

/// Lines over a numeric x axis. Axis labels carry the unit, e.g. "time (s)".
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

impl LineChart {
    /// A chart of the series that have points, x from zero, y range from the data.
    pub fn of_series(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> LineChart {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: series.into_iter().filter(|s| !s.points.is_empty()).collect(),
            y_range: None,
            x_from_zero: true,
        }
    }
}

/// Bars by category: `values[group][series]`, side by side or stacked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub series_labels: Vec<String>,
    pub values: Vec<Vec<f64>>,
    /// One bar per group with the series stacked (a drilldown), instead of one bar per series.
    pub stacked: bool,
}

/// Any chart the reports draw.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Line(LineChart),
    Bar(BarChart),
}

impl Chart {
    pub fn title(&self) -> &str {
        match self {
            Chart::Line(c) => &c.title,
            Chart::Bar(c) => &c.title,
        }
    }
}

impl From<LineChart> for Chart {
    fn from(chart: LineChart) -> Chart {
        Chart::Line(chart)
    }
}

impl From<BarChart> for Chart {
    fn from(chart: BarChart) -> Chart {
        Chart::Bar(chart)
    }
}
