//! Reports people read: the charts of a set of runs ([`charts`]) and one self-contained HTML
//! file per experiment ([`html`]): charts inline as SVG, the measured table beside the paper's
//! figures, each run's configuration and the machine, with no external resource so it opens
//! offline.
pub mod charts;
pub mod html;
pub mod machine;

pub use html::{Document, PaperTable};
pub use machine::MachineInfo;
