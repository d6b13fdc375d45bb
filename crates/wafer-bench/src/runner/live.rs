//! The live status line of a benchmark run on stderr: phase, a bar, and the figures so far.
//!
//! It implements [`crate::progress::Progress`] (the runners' one progress interface) but, unlike
//! the emulator's byte-based bar, its units are whatever the phase counts (records loaded, DB
//! bytes written, milliseconds run), so the bar shows a fraction and the note carries the figures.
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::progress::Progress;

const REDRAW_INTERVAL: Duration = Duration::from_millis(200);
const BAR_WIDTH_CHARS: usize = 24;

#[derive(Debug)]
pub struct LiveLine {
    enabled: bool,
    label: String,
    total: u64,
    started: Instant,
    last_draw: Option<Instant>,
}

impl LiveLine {
    /// Draws only if `wanted` and stderr is a terminal (piped output stays clean).
    pub fn new(wanted: bool) -> LiveLine {
        LiveLine {
            enabled: wanted && std::io::stderr().is_terminal(),
            label: String::new(),
            total: 0,
            started: Instant::now(),
            last_draw: None,
        }
    }
}

/// The line's text without terminal control codes.
pub fn render(label: &str, done: u64, total: u64, note: &str, elapsed: Duration) -> String {
    let fraction = if total == 0 { 0.0 } else { (done as f64 / total as f64).min(1.0) };
    let filled = (fraction * BAR_WIDTH_CHARS as f64).round() as usize;
    let bar: String = (0..BAR_WIDTH_CHARS).map(|i| if i < filled { '#' } else { '.' }).collect();
    format!("{label:<7} [{bar}] {:5.1}%  {:.0} s  {note}", fraction * 100.0, elapsed.as_secs_f64())
}

impl Progress for LiveLine {
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
        let line = render(&self.label, done, self.total, &note(), self.started.elapsed());
        // A failed write to stderr is not worth stopping a benchmark for.
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
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
    fn line_shows_fraction_and_note() {
        let line = render("run", 1, 4, "ops/s 12.0k", Duration::from_secs(3));
        assert!(line.contains(" 25.0%"), "{line}");
        assert!(line.contains("ops/s 12.0k"), "{line}");
        assert!(render("load", 9, 0, "", Duration::ZERO).contains("0.0%"));
    }
}
