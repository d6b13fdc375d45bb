//! The crate's error, in a file of its own so that the encoder and the drawing code need not
//! name `lib.rs`, which calls them.

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("chart size {0}x{1} is outside 200x150 ..= 8000x8000 pixels")]
    Size(u32, u32),
    #[error("drawing the chart: {0}")]
    Draw(String),
    #[error("encoding the PNG: {0}")]
    Png(#[from] ::png::EncodingError),
}
