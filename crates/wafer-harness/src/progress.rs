//! Progress reporting: a trait the runners call, a terminal bar on stderr (indicatif), and a
//! silent sink.
//!
//! The bar draws only when stderr is a terminal, so piping the output or running in CI prints
//! nothing extra.
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressDrawTarget, ProgressStyle};

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

/// How often the note is recomputed: it can cost a counter snapshot, and indicatif redraws at
/// most this often anyway.
const NOTE_INTERVAL: Duration = Duration::from_millis(100);
const REDRAW_HZ: u8 = 10;

/// `fill   [##########>.........]  45%  1.23 GiB/2.75 GiB  WAF 1.87  12s` when the phase
/// counts bytes, or without the totals when it counts something else (records loaded,
/// milliseconds run: the benchmark runner's live line).
#[derive(Debug)]
pub struct ProgressBar {
    enabled: bool,
    /// Units are bytes: show `done/total` in binary units.
    byte_totals: bool,
    bar: indicatif::ProgressBar,
    last_note: Option<Instant>,
}

const BYTES_TEMPLATE: &str =
    "{prefix:<6} [{bar:30}] {percent:>3}%  {binary_bytes}/{binary_total_bytes}  {msg}  {elapsed}";
const FRACTION_TEMPLATE: &str = "{prefix:<7} [{bar:30}] {percent:>3}%  {elapsed}  {msg}";

/// The bar's layout; `byte_totals` adds the byte counts.
fn style(byte_totals: bool) -> ProgressStyle {
    let template = if byte_totals { BYTES_TEMPLATE } else { FRACTION_TEMPLATE };
    // The templates are constants that parse; the default bar is a harmless fallback.
    ProgressStyle::with_template(template)
        .map_or_else(|_| ProgressStyle::default_bar(), |s| s.progress_chars("#>."))
}

impl ProgressBar {
    /// Draws only if `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> ProgressBar {
        ProgressBar {
            enabled: wanted && std::io::stderr().is_terminal(),
            byte_totals: true,
            bar: indicatif::ProgressBar::hidden(),
            last_note: None,
        }
    }

    /// A bar whose units are not bytes: fraction, note and time only.
    pub fn without_totals(wanted: bool) -> ProgressBar {
        ProgressBar { byte_totals: false, ..ProgressBar::new(wanted) }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
}

impl Progress for ProgressBar {
    fn start(&mut self, label: &str, total: u64) {
        let target = if self.enabled {
            ProgressDrawTarget::stderr_with_hz(REDRAW_HZ)
        } else {
            ProgressDrawTarget::hidden()
        };
        self.bar = indicatif::ProgressBar::with_draw_target(Some(total), target)
            .with_style(style(self.byte_totals))
            .with_prefix(label.to_string());
        self.last_note = None;
    }

    fn update(&mut self, done: u64, note: &dyn Fn() -> String) {
        if !self.enabled {
            return;
        }
        self.bar.set_position(done);
        let now = Instant::now();
        if !matches!(self.last_note, Some(last) if now - last < NOTE_INTERVAL) {
            self.last_note = Some(now);
            self.bar.set_message(note());
        }
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
        self.last_note = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_takes_updates_and_skips_the_note() {
        let mut bar = ProgressBar::new(false);
        assert!(!bar.is_enabled());
        bar.start("fill", 100);
        bar.update(50, &|| unreachable!("no note is computed for a bar nobody sees"));
        bar.finish();
        bar.start("run", 0);
        bar.finish();
    }

    #[test]
    fn both_layouts_parse() {
        // A template that failed to parse would fall back to indicatif's default bar, which
        // has no prefix: the label would vanish.
        for template in [BYTES_TEMPLATE, FRACTION_TEMPLATE] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
            assert!(template.contains("{prefix") && template.contains("{msg}"));
        }
    }
}
