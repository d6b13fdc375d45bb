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
}

fn options(mode: WriteMode) -> Options {
    let o = Options::production().with_create(CreateMode::Never);
    match mode {
        WriteMode::InPlace => o,
        WriteMode::OutOfPlace => o.out_of_place(),
    }
}

fn open(args: &CheckArgs) -> Result<Db, CliError> {
    let named = |e: Error| CliError(format!("{}: {e}", args.path.display()));
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
