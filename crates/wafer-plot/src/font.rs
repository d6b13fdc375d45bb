//! The one font every chart uses: DejaVu Sans from the `dejavu` crate, which ships the font
//! files with their licence (Bitstream Vera licence, free redistribution). Registered with
//! plotters' `ab_glyph` text path, so no system font, fontconfig or freetype is needed and a
//! chart looks the same on every machine.
use std::sync::Once;

use plotters::style::FontStyle;

/// The family name charts ask for; the SVG backend writes it into `font-family`, where a
/// browser falls back to its own sans-serif font.
pub(crate) const FAMILY: &str = "sans-serif";

static REGISTER: Once = Once::new();

pub(crate) fn register() {
    REGISTER.call_once(|| {
        // The embedded files are valid fonts: a failure here would mean a broken dependency,
        // and then text is simply not drawn (plotters reports a font error per text element).
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold());
    });
}
