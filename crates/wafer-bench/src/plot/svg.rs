//! An SVG surface: the same drawing calls as the canvas, written as SVG elements.
use std::fmt::Write as _;

use super::surface::{Align, Rgb, Surface, TEXT_HEIGHT_PX};

#[derive(Debug, Clone)]
pub struct Svg {
    width: u32,
    height: u32,
    body: String,
}

impl Svg {
    pub fn new(width: u32, height: u32, background: Rgb) -> Svg {
        assert!(width > 0 && height > 0, "empty drawing");
        let mut svg = Svg { width, height, body: String::new() };
        svg.fill_rect(0.0, 0.0, f64::from(width), f64::from(height), background);
        svg
    }

    pub fn finish(&self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\">\n{body}</svg>\n",
            w = self.width,
            h = self.height,
            body = self.body
        )
    }
}

/// Escapes text for XML character data and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

impl Surface for Svg {
    fn width(&self) -> u32 {
        self.width
    }

    fn height(&self) -> u32 {
        self.height
    }

    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb) {
        // Writing to a String cannot fail.
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\"/>",
            color.hex()
        );
    }

    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, width_px: f64, color: Rgb) {
        if !(x0.is_finite() && y0.is_finite() && x1.is_finite() && y1.is_finite()) {
            return;
        }
        let _ = writeln!(
            self.body,
            "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{}\" \
             stroke-width=\"{width_px:.1}\" stroke-linecap=\"round\"/>",
            color.hex()
        );
    }

    fn text(&mut self, x: f64, y: f64, text: &str, align: Align, vertical: bool, color: Rgb) {
        let anchor = match align {
            Align::Left => "start",
            Align::Center => "middle",
            Align::Right => "end",
        };
        let rotate = if vertical {
            format!(" transform=\"rotate(-90 {x:.1} {y:.1})\"")
        } else {
            String::new()
        };
        // font-size ~ 1.2x the cap height of the bitmap font, so both renderers take similar room.
        let size_px = f64::from(TEXT_HEIGHT_PX) * 1.2;
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-family=\"monospace\" font-size=\"{size_px:.0}\" \
             text-anchor=\"{anchor}\" dominant-baseline=\"middle\" fill=\"{}\"{rotate}>{}</text>",
            color.hex(),
            escape(text)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_escapes_text_and_closes_the_document() {
        let mut svg = Svg::new(100, 50, Rgb::WHITE);
        svg.line(0.0, 0.0, 10.0, 10.0, 2.0, Rgb::BLACK);
        svg.line(f64::NAN, 0.0, 10.0, 10.0, 2.0, Rgb::BLACK);
        svg.text(5.0, 5.0, "a<b & \"c\"", Align::Left, true, Rgb::BLACK);
        let doc = svg.finish();
        assert!(doc.starts_with("<svg "));
        assert!(doc.ends_with("</svg>\n"));
        assert!(doc.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(doc.contains("rotate(-90"));
        assert_eq!(doc.matches("<line").count(), 1, "NaN lines are dropped");
    }
}
