//! A raster canvas: RGB pixels, thick lines, filled rectangles and bitmap text; encodes to PNG.
use super::font;
use super::png;
use super::surface::{text_width_px, Align, Rgb, Surface, TEXT_HEIGHT_PX, TEXT_SCALE};

/// Largest canvas side: bounds memory (16k x 16k x 3 = 768 MiB would be a bug, not a chart).
pub const MAX_SIDE_PX: u32 = 8192;

#[derive(Debug, Clone)]
pub struct Canvas {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    pub fn new(width: u32, height: u32, background: Rgb) -> Canvas {
        assert!(width > 0 && height > 0, "empty canvas");
        assert!(width <= MAX_SIDE_PX && height <= MAX_SIDE_PX, "canvas too large");
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        for _ in 0..width as usize * height as usize {
            rgb.extend_from_slice(&[background.0, background.1, background.2]);
        }
        Canvas { width, height, rgb }
    }

    pub fn pixel(&self, x: u32, y: u32) -> Rgb {
        assert!(x < self.width && y < self.height);
        let at = (y as usize * self.width as usize + x as usize) * 3;
        Rgb(self.rgb[at], self.rgb[at + 1], self.rgb[at + 2])
    }

    /// Sets one pixel; pixels outside the canvas are clipped silently (lines may overshoot).
    pub fn set(&mut self, x: i64, y: i64, color: Rgb) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let at = (y as usize * self.width as usize + x as usize) * 3;
        self.rgb[at] = color.0;
        self.rgb[at + 1] = color.1;
        self.rgb[at + 2] = color.2;
    }

    pub fn to_png(&self) -> Vec<u8> {
        png::encode_rgb(self.width, self.height, &self.rgb)
    }

    fn brush(&mut self, x: i64, y: i64, width_px: i64, color: Rgb) {
        let lo = -(width_px - 1) / 2;
        let hi = width_px / 2;
        for dy in lo..=hi {
            for dx in lo..=hi {
                self.set(x + dx, y + dy, color);
            }
        }
    }
}

impl Surface for Canvas {
    fn width(&self) -> u32 {
        self.width
    }

    fn height(&self) -> u32 {
        self.height
    }

    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb) {
        let x0 = x.round().max(0.0) as i64;
        let y0 = y.round().max(0.0) as i64;
        let x1 = (x + w).round().min(f64::from(self.width)) as i64;
        let y1 = (y + h).round().min(f64::from(self.height)) as i64;
        for py in y0..y1 {
            for px in x0..x1 {
                self.set(px, py, color);
            }
        }
    }

    /// Bresenham with a square brush: crisp, and good enough for chart lines.
    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, width_px: f64, color: Rgb) {
        if !(x0.is_finite() && y0.is_finite() && x1.is_finite() && y1.is_finite()) {
            return;
        }
        // Clamp far-away endpoints so the step loop stays bounded.
        let limit = f64::from(MAX_SIDE_PX) * 2.0;
        let clamp = |v: f64| v.clamp(-limit, limit).round() as i64;
        let (mut x, mut y, x_end, y_end) = (clamp(x0), clamp(y0), clamp(x1), clamp(y1));
        let brush_px = (width_px.round() as i64).max(1);
        let dx = (x_end - x).abs();
        let dy = -(y_end - y).abs();
        let sx = if x < x_end { 1 } else { -1 };
        let sy = if y < y_end { 1 } else { -1 };
        let mut err = dx + dy;
        let steps_max = dx.max(-dy) + 1;
        for _ in 0..=steps_max {
            self.brush(x, y, brush_px, color);
            if x == x_end && y == y_end {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn text(&mut self, x: f64, y: f64, text: &str, align: Align, vertical: bool, color: Rgb) {
        let width = i64::from(text_width_px(text));
        let offset = match align {
            Align::Left => 0,
            Align::Center => width / 2,
            Align::Right => width,
        };
        let half_height = i64::from(TEXT_HEIGHT_PX) / 2;
        let scale = i64::from(TEXT_SCALE);
        let (ax, ay) = (x.round() as i64, y.round() as i64);
        for (index, c) in text.chars().enumerate() {
            let rows = font::glyph(c);
            let char_x = index as i64 * i64::from(font::ADVANCE) * scale - offset;
            for (row, bits) in rows.iter().enumerate() {
                for col in 0..font::GLYPH_WIDTH {
                    if bits & (1 << (font::GLYPH_WIDTH - 1 - col)) == 0 {
                        continue;
                    }
                    for sy in 0..scale {
                        for sx in 0..scale {
                            // Position along the text (u) and across it (v, downwards).
                            let u = char_x + i64::from(col) * scale + sx;
                            let v = row as i64 * scale + sy - half_height;
                            if vertical {
                                self.set(ax + v, ay - u, color);
                            } else {
                                self.set(ax + u, ay + v, color);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_text_mark_pixels_and_clip_outside() {
        let mut canvas = Canvas::new(40, 20, Rgb::WHITE);
        canvas.line(-10.0, 5.0, 100.0, 5.0, 1.0, Rgb::BLACK);
        assert_eq!(canvas.pixel(0, 5), Rgb::BLACK);
        assert_eq!(canvas.pixel(39, 5), Rgb::BLACK);
        assert_eq!(canvas.pixel(39, 6), Rgb::WHITE);
        canvas.line(3.0, 0.0, 3.0, 19.0, 3.0, Rgb(1, 2, 3));
        assert_eq!(canvas.pixel(2, 10), Rgb(1, 2, 3));
        assert_eq!(canvas.pixel(4, 10), Rgb(1, 2, 3));
        assert_eq!(canvas.pixel(6, 10), Rgb::WHITE);

        let mut canvas = Canvas::new(30, 30, Rgb::WHITE);
        canvas.text(0.0, 7.0, "1", Align::Left, false, Rgb::BLACK);
        // '1' top row is 0b00100: column 2, scaled by 2 -> pixels 4 and 5 of row 0.
        assert_eq!(canvas.pixel(4, 0), Rgb::BLACK);
        assert_eq!(canvas.pixel(0, 0), Rgb::WHITE);
    }
}
