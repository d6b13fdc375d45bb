//! Experiments that reproduce the papers' tables with one command, scaled to this machine.
pub mod fig15;
pub mod fig16;
pub mod plan;
pub mod table1;

pub use table1::{ExperimentError, RowPlan, Scale, ROWS as TABLE1_ROWS};
