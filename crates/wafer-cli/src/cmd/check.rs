//! `wafer check PATH`: opens an existing database (recovering it, as any open does; never
//! creating one) and runs `Db::check`: exit status 0 when clean, 1 with every violation listed.
use std::path::PathBuf;

use clap::Args;
use wafer::{CreateMode, Db, Error, Options, WriteMode};

use super::CliError;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The database's data file (its WAL is PATH.wal).
    path: PathBuf,
    /// in-place or out-of-place; default: whichever the superblock records.
    #[arg(long, value_name = "MODE")]
    write_mode: Option<String>,
    /// Where the superblock starts (the engine option `data_offset_bytes`); default: found by
    /// reading the file.
    #[arg(long, value_name = "BYTES")]
    data_offset: Option<u64>,
}

/// The superblock is looked for in this much of the file's start.
const SUPERBLOCK_SEARCH_BYTES: u64 = 64 << 20;

/// Finds `data_offset_bytes` by reading: the 4 KiB-aligned offsets holding a valid superblock.
/// In place the doublewrite area may hold copies of page 0, so the one whose page count spans
/// the rest of the file wins. None: no superblock, or no way to choose.
fn find_data_offset(path: &std::path::Path) -> Result<Option<u64>, CliError> {
    use std::os::unix::fs::FileExt;
    let file =
        std::fs::File::open(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let len = file.metadata().map_err(|e| CliError(format!("{}: {e}", path.display())))?.len();
    let mut found = Vec::new();
    let mut page = [0u8; 4096];
    // Bounded by the search window.
    for offset in (0..len.min(SUPERBLOCK_SEARCH_BYTES)).step_by(4096) {
        if file.read_exact_at(&mut page, offset).is_err() {
            break;
        }
        if let Ok(meta) = wafer::page::meta::Meta::decode(&page) {
            found.push((offset, meta.page_capacity));
        }
    }
    let spans_rest = found.iter().find(|(offset, pages)| (len - offset) / 4096 == *pages);
    Ok(match (spans_rest, found.as_slice()) {
        (Some((offset, _)), _) => Some(*offset),
        (None, [(offset, _)]) => Some(*offset),
        _ => None,
    })
}

fn options(mode: WriteMode, data_offset_bytes: Option<u64>) -> Options {
    let mut o = Options::production().with_create(CreateMode::Never);
    if let Some(offset) = data_offset_bytes {
        o.data_offset_bytes = offset;
        // A doublewrite area of that size takes batches of at most its slots.
        let slots = (offset / 4096).saturating_sub(1).max(1);
        o.eviction_batch_pages = o.eviction_batch_pages.min(slots as usize);
    }
    match mode {
        WriteMode::InPlace => o,
        WriteMode::OutOfPlace => o.out_of_place(),
    }
}

fn open(args: &CheckArgs) -> Result<Db, CliError> {
    // Open errors name the file already.
    let named = |e: Error| CliError(e.to_string());
    let offset = match args.data_offset {
        Some(offset) => Some(offset),
        None => match find_data_offset(&args.path)? {
            Some(offset) => Some(offset),
            None => {
                return Err(CliError(format!(
                    "{}: not a Wafer database: no single valid superblock in its first {} MiB \
                     (pass --data-offset if it lies elsewhere)",
                    args.path.display(),
                    SUPERBLOCK_SEARCH_BYTES >> 20
                )))
            }
        },
    };
    let options = |mode| options(mode, offset);
    let mode = match args.write_mode.as_deref() {
        None => None,
        Some("in-place") => Some(WriteMode::InPlace),
        Some("out-of-place") => Some(WriteMode::OutOfPlace),
        Some(other) => {
            return Err(CliError(format!(
                "--write-mode {other}: expected in-place or out-of-place"
            )))
        }
    };
    if let Some(mode) = mode {
        return Db::open(&args.path, options(mode)).map_err(named);
    }
    match Db::open(&args.path, options(WriteMode::InPlace)) {
        // The superblock names the other mode: nothing was written yet (the mode is read
        // before any store is built).
        Err(Error::InvalidOptions(m)) if m.contains("write mode OutOfPlace") => {
            Db::open(&args.path, options(WriteMode::OutOfPlace)).map_err(named)
        }
        r => r.map_err(named),
    }
}

pub fn run(args: CheckArgs) -> Result<(), CliError> {
    let db = open(&args)?;
    let report = db.check().map_err(|e| CliError(format!("{}: {e}", args.path.display())))?;
    let clean = report.is_clean();
    println!("{}: {report}", args.path.display());
    db.close().map_err(|e| CliError(format!("{}: close: {e}", args.path.display())))?;
    if clean {
        Ok(())
    } else {
        Err(CliError(format!("{}: {} violations", args.path.display(), report.violations.len())))
    }
}
