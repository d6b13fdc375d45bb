//! What a chart draws on: the same layout code renders to a raster canvas (PNG) or to SVG.

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub const WHITE: Rgb = Rgb(255, 255, 255);
    pub const BLACK: Rgb = Rgb(0, 0, 0);
    pub const GRID: Rgb = Rgb(225, 225, 225);
    pub const AXIS: Rgb = Rgb(60, 60, 60);

    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Distinguishable series colours (Tableau 10), cycled.
pub const PALETTE: [Rgb; 8] = [
    Rgb(31, 119, 180),
    Rgb(255, 127, 14),
    Rgb(44, 160, 44),
    Rgb(214, 39, 40),
    Rgb(148, 103, 189),
    Rgb(140, 86, 75),
    Rgb(227, 119, 194),
    Rgb(127, 127, 127),
];

pub fn series_color(index: usize) -> Rgb {
    PALETTE[index % PALETTE.len()]
}

/// Horizontal placement of text relative to its anchor point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Center,
    Right,
}

/// Text size in pixels: the 5x7 font scaled by 2 is 10 px wide per glyph, 14 px tall, and the
/// SVG renderer uses a monospace font of matching size so layouts agree.
pub const TEXT_SCALE: u32 = 2;
pub const TEXT_HEIGHT_PX: u32 = super::font::GLYPH_HEIGHT * TEXT_SCALE;

pub fn text_width_px(text: &str) -> u32 {
    super::font::text_width(text) * TEXT_SCALE
}

/// Drawing primitives. Coordinates are pixels, origin top-left, y down.
pub trait Surface {
    fn width(&self) -> u32;
    fn height(&self) -> u32;
    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb);
    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, width_px: f64, color: Rgb);
    /// Text whose vertical centre is at `y`. `vertical` rotates it 90 degrees counter-clockwise
    /// (reading bottom to top) around the anchor, for y axis titles.
    fn text(&mut self, x: f64, y: f64, text: &str, align: Align, vertical: bool, color: Rgb);
}
