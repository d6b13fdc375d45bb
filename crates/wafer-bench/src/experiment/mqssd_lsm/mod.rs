//! 001 sec. 5.2-5.3 on this machine: RocksDB's insert, point-query and scan times as the fanout
//! F and the concurrency k change, measured with Debian's `db_bench` and set beside eq. 9-12
//! costed with this disk's MQSSD profile (001 Tables 3-4 and Figure 5).
//!
//! 001 loads 6.4e7 keys of 16 + 2048 bytes (128 GB) with 64 MiB files; no sweep of 36 cells of
//! that fits in half an hour on a 2-core VM, so [`Sweep::full`] keeps the key and value sizes,
//! the L0 trigger C = 4 and 128 keys per scan, and scales the data and the file size down
//! together (see [`Sweep::scale_note`]).
pub mod dbbench;
mod error;
pub mod model;
pub mod report;
mod sweep;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::mqssd::DeviceProfile;

pub use error::LsmError;
pub use sweep::{FillRun, Layout, ReadBench, ReadRun, Sweep};

/// What a sweep needs besides its sizes.
#[derive(Debug, Clone)]
pub struct Request {
    pub sweep: Sweep,
    /// The db_bench program (a name on PATH or a path).
    pub db_bench: PathBuf,
    /// Where the databases go: a directory on the disk the profile measured, not tmpfs
    /// (direct I/O).
    pub dir: PathBuf,
    /// Keep each layout's database after its reads.
    pub keep: bool,
    /// Where the profile came from, for the report.
    pub profile_source: String,
}

/// The sweep's measurements and eq. 9-12's predictions (its JSON reads back for rendering).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LsmReport {
    pub sweep: Sweep,
    pub db_bench_version: String,
    pub profile_source: String,
    pub scale_note: String,
    pub elapsed_s: f64,
    pub fills: Vec<FillRun>,
    pub reads: Vec<ReadRun>,
    pub predictions: Vec<model::Prediction>,
    /// One constant per benchmark aligning the predictions with the measurements (001: "we
    /// reintroduce constants"): the geometric mean of measured / predicted.
    pub constants: model::Constants,
}

/// Runs the sweep: per layout, a fresh fill at each k (the last one's database stays for the
/// reads), then queries and scans at each k.
pub fn run(
    request: &Request,
    profile: &DeviceProfile,
    on_line: &mut dyn FnMut(&str),
) -> Result<LsmReport, LsmError> {
    let started = std::time::Instant::now();
    let sweep = &request.sweep;
    let program = &request.db_bench;
    let db_bench_version = dbbench::version(program)?;
    std::fs::create_dir_all(&request.dir)
        .map_err(|source| LsmError::Io { what: request.dir.display().to_string(), source })?;
    let (mut fills, mut reads) = (Vec::new(), Vec::new());
    for &layout in &sweep.layouts {
        let db = request.dir.join(layout.slug());
        for &k in &sweep.ks {
            let fill = dbbench::fill(program, &db, sweep, layout, k)?;
            on_line(&format!(
                "{} k={k}: insert {:.2} s (load {:.2} s), {} sorted runs",
                layout.label(),
                fill.insert_s,
                fill.load_s,
                fill.sorted_runs
            ));
            fills.push(fill);
        }
        for bench in [ReadBench::Query, ReadBench::Scan] {
            for &k in &sweep.ks {
                let read = dbbench::read(program, &db, sweep, layout, k, bench)?;
                on_line(&format!("{} k={k}: {bench:?} {:.2} s", layout.label(), read.elapsed_s));
                reads.push(read);
            }
        }
        if !request.keep {
            std::fs::remove_dir_all(&db)
                .map_err(|source| LsmError::Io { what: db.display().to_string(), source })?;
        }
    }
    let predictions = model::predict_all(sweep, profile);
    let constants = model::Constants::fit(&predictions, &fills, &reads);
    Ok(LsmReport {
        sweep: sweep.clone(),
        db_bench_version,
        profile_source: request.profile_source.clone(),
        scale_note: sweep.scale_note(),
        elapsed_s: started.elapsed().as_secs_f64(),
        fills,
        reads,
        predictions,
        constants,
    })
}
