//! Experiments that reproduce the papers' tables with one command, scaled to this machine.
pub mod cczns;
pub mod fig13;
pub mod fig14;
pub mod fig15;
pub mod fig16;
pub mod infer_gc_unit;
pub mod mqssd_lsm;
pub mod nowa_modes;
pub mod plan;
pub mod table1;
pub mod table1_artifact;
pub mod table2;
pub mod table3;

pub use table1::{ExperimentError, RowPlan, Scale, ROWS as TABLE1_ROWS};

/// Prepares and runs one benchmark configuration of the row `row` on a fresh device.
pub(crate) fn run_config(
    row: &'static str,
    config: &crate::runner::setup::BenchConfig,
    progress: &mut dyn crate::progress::Progress,
) -> Result<crate::metrics::RunReport, ExperimentError> {
    let p = crate::runner::setup::prepare(config)
        .map_err(|source| ExperimentError::Setup { row, source })?;
    crate::runner::run(p.target.as_ref(), &p.spec, p.setup, progress)
        .map_err(|source| ExperimentError::Run { row, source })
}

/// `STEM-suffix.png`, or `.svg` when `svg`: where an experiment writes one figure.
pub(crate) fn figure_path(stem: &std::path::Path, suffix: &str, svg: bool) -> std::path::PathBuf {
    let mut name = stem.with_extension("").into_os_string();
    name.push(format!("-{suffix}.{}", if svg { "svg" } else { "png" }));
    std::path::PathBuf::from(name)
}

/// One chart at the experiments' figure size, as SVG text or PNG bytes.
pub(crate) fn render_chart(chart: crate::plot::Chart, svg: bool) -> std::io::Result<Vec<u8>> {
    const SIZE_PX: (u32, u32) = (900, 520);
    let bytes = if svg {
        crate::plot::render_svg(&chart, SIZE_PX).map(String::into_bytes)
    } else {
        crate::plot::render_png(&chart, SIZE_PX)
    };
    bytes.map_err(std::io::Error::other)
}
