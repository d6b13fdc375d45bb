//! `wafer check PATH`: opens an existing database (recovering it, as any open does; never
//! creating one) and runs `Db::check`: exit status 0 when clean, 1 with every violation listed.
//! The superblock's offset and write mode are read from the file; options the superblock does
//! not record (the out-of-place zone size) come from `--engine` as the bench takes them.
use std::path::{Path, PathBuf};

use clap::Args;
use wafer::{CreateMode, Db, Options, WriteMode};
use wafer_bench::runner::engine::set_engine_option;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    db: DbArgs,
}

/// An existing database, as `check` and `stats` open it.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The database's data file (its WAL is PATH.wal).
    path: PathBuf,
    /// Where the superblock starts (the engine option `data_offset_bytes`); default: found by
    /// reading the file.
    #[arg(long, value_name = "BYTES")]
    data_offset: Option<u64>,
    /// Engine option KEY=VALUE as the database was created with (zone_bytes=1MiB, ...),
    /// repeatable.
    #[arg(long = "engine", value_name = "KEY=VALUE")]
    engine: Vec<String>,
}

/// The superblock is looked for in this much of the file's start.
const SUPERBLOCK_SEARCH_BYTES: u64 = 64 << 20;

/// A valid superblock found in the file: where, and the write mode it records.
struct Found {
    offset: u64,
    write_mode: u8,
}

/// Finds the superblock by reading the 4 KiB-aligned offsets of the file's start. In place the
/// doublewrite area may hold copies of page 0, so the one whose page count spans the rest of
/// the file wins; otherwise it must be the only one.
fn find_superblock(path: &Path, at: Option<u64>) -> Result<Option<Found>, CliError> {
    use std::os::unix::fs::FileExt;
    let io = |e: std::io::Error| CliError(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut found = Vec::new();
    let mut page = [0u8; 4096];
    let offsets: Vec<u64> = match at {
        Some(offset) => vec![offset],
        None => (0..len.min(SUPERBLOCK_SEARCH_BYTES)).step_by(4096).collect(),
    };
    // Bounded by the search window.
    for offset in offsets {
        if file.read_exact_at(&mut page, offset).is_err() {
            break;
        }
        if let Ok(meta) = wafer::internals::page::meta::Meta::decode(&page) {
            found.push((offset, meta.page_capacity, meta.write_mode));
        }
    }
    let spans_rest = found.iter().find(|(offset, pages, _)| (len - offset) / 4096 == *pages);
    Ok(match (spans_rest, found.as_slice()) {
        (Some(&(offset, _, write_mode)), _) | (None, &[(offset, _, write_mode)]) => {
            Some(Found { offset, write_mode })
        }
        _ => None,
    })
}

fn options(args: &DbArgs, found: &Found) -> Result<Options, CliError> {
    let mut o = Options::production().with_create(CreateMode::Never);
    match WriteMode::from_u8(found.write_mode) {
        Some(WriteMode::OutOfPlace) => o = o.out_of_place(),
        Some(WriteMode::InPlace) => {}
        None => return Err(CliError(format!("unknown write mode {}", found.write_mode))),
    }
    o.data_offset_bytes = found.offset;
    // A doublewrite area of that size takes batches of at most its slots.
    let slots = (found.offset / 4096).saturating_sub(1).max(1);
    o.eviction_batch_pages = o.eviction_batch_pages.min(slots as usize);
    apply_engine_options(&mut o, &args.engine)?;
    Ok(o)
}

/// Applies `--engine KEY=VALUE` pairs as the bench takes them.
pub fn apply_engine_options(options: &mut Options, pairs: &[String]) -> Result<(), CliError> {
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(CliError(format!("--engine {pair}: expected KEY=VALUE")));
        };
        set_engine_option(options, key, value).map_err(CliError)?;
    }
    Ok(())
}

/// Opens the existing database `args` names (recovering it, never creating one).
pub fn open_existing(args: &DbArgs) -> Result<Db, CliError> {
    let path = args.path.display();
    let Some(found) = find_superblock(&args.path, args.data_offset)? else {
        return Err(CliError(format!(
            "{path}: not a Wafer database: no single valid superblock in its first {} MiB \
             (pass --data-offset if it lies elsewhere)",
            SUPERBLOCK_SEARCH_BYTES >> 20
        )));
    };
    // Open errors name the file already.
    Db::open(&args.path, options(args, &found)?).map_err(|e| CliError(e.to_string()))
}

impl DbArgs {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub fn run(args: CheckArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let path = args.db.path.display();
    let report = db.check().map_err(|e| CliError(format!("{path}: {e}")))?;
    let clean = report.is_clean();
    println!("{path}: {report}");
    db.close().map_err(|e| CliError(format!("{path}: close: {e}")))?;
    if clean {
        Ok(())
    } else {
        Err(CliError(format!("{path}: {} violations", report.violations.len())))
    }
}
