//! `wafer dump PATH` and `wafer load FILE NEWDB`: every tree through the portable, versioned,
//! checksummed stream of `wafer::dump` (its module doc gives the format), for upgrades and
//! salvage. `wafer backup SRC DST`: a copy as a new database (`Db::backup_to`).
use std::io::Write;
use std::path::PathBuf;

use super::check::{apply_engine_options, open_existing, DbArgs};
use super::error::CliError;
use clap::Args;
use wafer::{CreateMode, Db, Options};

#[derive(Debug, Args)]
pub struct DumpArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Write the stream here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// A stream `wafer dump` wrote (`-` for standard input).
    input: PathBuf,
    /// The new database's data file (its WAL is NEWDB.wal); neither may exist.
    new_db: PathBuf,
    /// Engine option KEY=VALUE for the new database (write_mode=out-of-place,
    /// blob_threshold=1KiB, file_capacity_bytes=64GiB, ...), repeatable.
    #[arg(long = "engine", value_name = "KEY=VALUE")]
    engine: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The backup's data file (its WAL is DST.wal); neither may exist.
    dst: PathBuf,
}

pub fn backup(args: BackupArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let path = args.db.path().display().to_string();
    let dst = args.dst.display().to_string();
    let totals = db.backup_to(&args.dst).map_err(|e| CliError(format!("{dst}: {e}")))?;
    db.close().map_err(|e| CliError(format!("{path}: close: {e}")))?;
    eprintln!(
        "{dst}: backed up {} trees, {} entries, {} bytes of keys and values from {path}",
        totals.trees, totals.entries, totals.bytes
    );
    Ok(())
}

pub fn dump(args: DumpArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let path = args.db.path().display().to_string();
    let out: Box<dyn Write> = match &args.output {
        Some(file) => Box::new(
            std::fs::File::create(file)
                .map_err(|e| CliError(format!("{}: {e}", file.display())))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let totals = wafer::dump::dump(&db, out).map_err(|e| CliError(format!("{path}: {e}")))?;
    db.close().map_err(|e| CliError(format!("{path}: close: {e}")))?;
    eprintln!(
        "{path}: dumped {} trees, {} entries, {} value bytes",
        totals.trees, totals.entries, totals.value_bytes
    );
    Ok(())
}

pub fn load(args: LoadArgs) -> Result<(), CliError> {
    let mut options = Options::production().with_create(CreateMode::New);
    apply_engine_options(&mut options, &args.engine)?;
    let input: Box<dyn std::io::Read> = if args.input.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(&args.input)
            .map_err(|e| CliError(format!("{}: {e}", args.input.display())))?;
        Box::new(file)
    };
    let target = args.new_db.display().to_string();
    let db = Db::open(&args.new_db, options).map_err(|e| CliError(e.to_string()))?;
    let source = args.input.display();
    let totals = wafer::dump::load(input, &db).map_err(|e| CliError(format!("{source}: {e}")))?;
    db.close().map_err(|e| CliError(format!("{target}: close: {e}")))?;
    eprintln!(
        "{target}: loaded {} trees, {} entries, {} value bytes",
        totals.trees, totals.entries, totals.value_bytes
    );
    Ok(())
}
