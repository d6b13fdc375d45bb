//! Progress reporting: a trait the runners call, a terminal bar on stderr, and a silent sink.
//!
//! The bar redraws at most ten times a second and only when stderr is a terminal, so piping the
//! output or running in CI prints nothing extra.
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// What a long-running loop reports. `update` is called often (every few hundred I/Os), so
/// implementations must be cheap when they have nothing to draw.
pub trait Progress {
    /// A new phase of `total` units (bytes) begins.
    fn start(&mut self, label: &str, total: u64);
    /// `done` of the phase's `total`; `note` is extra text (the current WAF).
    fn update(&mut self, done: u64, note: &dyn Fn() -> String);
    /// The phase is over: leave the terminal clean.
    fn finish(&mut self);
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn start(&mut self, _label: &str, _total: u64) {}
    fn update(&mut self, _done: u64, _note: &dyn Fn() -> String) {}
    fn finish(&mut self) {}
}

const REDRAW_INTERVAL: Duration = Duration::from_millis(100);
const BAR_WIDTH_CHARS: usize = 30;

/// A one-line bar on stderr: `fill  [#########.....]  45.0%  1.23/2.75 GiB  WAF 1.87  12 s`
/// when the phase counts bytes, or without the totals when it counts something else (records
/// loaded, milliseconds run: the benchmark runner's live line).
#[derive(Debug)]
pub struct ProgressBar {
    enabled: bool,
    /// Units are bytes: show `done/total GiB`.
    byte_totals: bool,
    label: String,
    total: u64,
    started: Instant,
    last_draw: Option<Instant>,
}

impl ProgressBar {
    /// Draws only if `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> ProgressBar {
        ProgressBar {
            enabled: wanted && std::io::stderr().is_terminal(),
            byte_totals: true,
            label: String::new(),
            total: 0,
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// A bar whose units are not bytes: fraction, note and time only.
    pub fn without_totals(wanted: bool) -> ProgressBar {
        ProgressBar { byte_totals: false, ..ProgressBar::new(wanted) }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    fn draw(&mut self, done: u64, note: &str) {
        let elapsed = self.started.elapsed();
        let line = if self.byte_totals {
            render_line(&self.label, done, self.total, note, elapsed)
        } else {
            render_fraction(&self.label, done, self.total, note, elapsed)
        };
        // A failed write to stderr is not worth stopping a simulation for.
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }
}

fn bar(fraction: f64) -> String {
    let filled = (fraction * BAR_WIDTH_CHARS as f64).round() as usize;
    (0..BAR_WIDTH_CHARS).map(|i| if i < filled { '#' } else { '.' }).collect()
}

/// The line of a phase that counts something other than bytes, without control codes.
pub fn render_fraction(
    label: &str,
    done: u64,
    total: u64,
    note: &str,
    elapsed: Duration,
) -> String {
    let fraction = if total == 0 { 0.0 } else { (done as f64 / total as f64).min(1.0) };
    let bar = bar(fraction);
    format!("{label:<7} [{bar}] {:5.1}%  {:.0} s  {note}", fraction * 100.0, elapsed.as_secs_f64())
}

/// The bar's text, without terminal control codes.
pub fn render_line(label: &str, done: u64, total: u64, note: &str, elapsed: Duration) -> String {
    let fraction = if total == 0 { 1.0 } else { (done as f64 / total as f64).min(1.0) };
    let bar = bar(fraction);
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    format!(
        "{label:<6} [{bar}] {:5.1}%  {:.2}/{:.2} GiB  {note}  {:.0} s",
        fraction * 100.0,
        gib(done),
        gib(total),
        elapsed.as_secs_f64()
    )
}

impl Progress for ProgressBar {
    fn start(&mut self, label: &str, total: u64) {
        self.label = label.to_string();
        self.total = total;
        self.started = Instant::now();
        self.last_draw = None;
    }

    fn update(&mut self, done: u64, note: &dyn Fn() -> String) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last_draw.is_some_and(|last| now - last < REDRAW_INTERVAL) {
            return;
        }
        self.last_draw = Some(now);
        self.draw(done, &note());
    }

    fn finish(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
        self.last_draw = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_fraction_and_totals() {
        let line = render_line("run", 1 << 30, 4 << 30, "WAF 2.00", Duration::from_secs(3));
        assert!(line.starts_with("run    [########"), "{line}");
        assert!(line.contains(" 25.0%"), "{line}");
        assert!(line.contains("1.00/4.00 GiB"), "{line}");
        assert!(line.contains("WAF 2.00"));
        let done = render_line("fill", 10, 0, "", Duration::ZERO);
        assert!(done.contains("100.0%"));
    }

    #[test]
    fn line_without_totals_shows_fraction_and_note() {
        let line = render_fraction("run", 1, 4, "ops/s 12.0k", Duration::from_secs(3));
        assert!(line.contains(" 25.0%"), "{line}");
        assert!(line.contains("ops/s 12.0k"), "{line}");
        assert!(!line.contains("GiB"), "{line}");
        assert!(render_fraction("load", 9, 0, "", Duration::ZERO).contains("0.0%"));
    }
}
