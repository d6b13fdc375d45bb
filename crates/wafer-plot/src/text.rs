//! Text for the bitmap backend: a wrapper that forwards every shape to the inner backend and
//! draws text itself with ab_glyph, each glyph at its sub-pixel position with its side bearing,
//! anti-aliased by the glyph's coverage. (plotters' own ab_glyph path rounds each glyph to the
//! pixel and drops the bearing, so letters sit unevenly.) The same layout answers
//! `estimate_text_size`, so the label areas plotters reserves fit the text drawn.
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, Glyph, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontStyle,
};

struct Fonts {
    regular: FontRef<'static>,
    bold: FontRef<'static>,
}

fn fonts() -> Option<&'static Fonts> {
    static FONTS: OnceLock<Option<Fonts>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let regular = FontRef::try_from_slice(dejavu::sans::regular()).ok()?;
            let bold = FontRef::try_from_slice(dejavu::sans::bold()).ok()?;
            Some(Fonts { regular, bold })
        })
        .as_ref()
}

/// Glyphs of one line of text, positioned from a baseline at y = ascent; and the line's
/// width and height in pixels.
fn layout(font: &FontRef<'static>, size_px: f64, text: &str) -> (Vec<Glyph>, f32, f32) {
    let scale = PxScale::from(size_px as f32);
    let scaled = font.as_scaled(scale);
    let mut glyphs = Vec::with_capacity(text.len());
    let mut caret = 0.0f32;
    let mut previous = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = previous {
            caret += scaled.kern(p, id);
        }
        glyphs.push(id.with_scale_and_position(scale, ab_glyph::point(caret, scaled.ascent())));
        caret += scaled.h_advance(id);
        previous = Some(id);
    }
    (glyphs, caret, scaled.ascent() - scaled.descent())
}

fn font_for<S: BackendTextStyle>(style: &S) -> Option<&'static FontRef<'static>> {
    let fonts = fonts()?;
    Some(if matches!(style.style(), FontStyle::Bold) { &fonts.bold } else { &fonts.regular })
}

/// A bitmap backend whose text is laid out by [`layout`].
pub(crate) struct AaText<DB>(pub(crate) DB);

impl<DB: DrawingBackend> DrawingBackend for AaText<DB> {
    type ErrorType = DB::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let Some(font) = font_for(style) else {
            return self.0.estimate_text_size(text, style);
        };
        let (_, width, height) = layout(font, style.size(), text);
        Ok((width.ceil() as u32, height.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        let Some(font) = font_for(style).filter(|_| color.alpha > 0.0) else {
            return self.0.draw_text(text, style, pos);
        };
        let (glyphs, width, height) = layout(font, style.size(), text);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        let mut pixels = Vec::new();
        for glyph in glyphs {
            let Some(outline) = font.outline_glyph(glyph) else { continue };
            let bounds = outline.px_bounds();
            outline.draw(|x, y, coverage| {
                let gx = (bounds.min.x + x as f32 + dx).round() as i32;
                let gy = (bounds.min.y + y as f32 + dy).round() as i32;
                pixels.push((transform.transform(gx, gy), coverage));
            });
        }
        for ((x, y), coverage) in pixels {
            let (x, y) = (pos.0 + x, pos.1 + y);
            if coverage > 0.0 && x >= 0 && y >= 0 && x < w as i32 && y < h as i32 {
                let alpha = color.alpha * f64::from(coverage.min(1.0));
                self.0.draw_pixel((x, y), BackendColor { alpha, rgb: color.rgb })?;
            }
        }
        Ok(())
    }
}
