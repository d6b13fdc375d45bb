//! RGB pixels to a compressed PNG (the `png` crate's deflate; charts are mostly flat colour, so
//! a 960x600 chart takes tens of kilobytes).
use crate::error::PlotError;

pub(crate) fn png_rgb(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, PlotError> {
    let mut out = Vec::with_capacity(64 << 10);
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}
