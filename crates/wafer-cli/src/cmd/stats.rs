//! `wafer stats PATH`: opens an existing database (as `wafer check` does) and prints its
//! `DbStats` as JSON or in the Prometheus text format, the figures an application exports.
use clap::{Args, ValueEnum};

use super::check::{open_existing, DbArgs};
use super::error::CliError;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatsFormat {
    /// The nested object `DbStats` serialises to.
    Json,
    /// The Prometheus text exposition (`DbStats::prometheus_text`).
    Prometheus,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArgs,
    #[arg(long, value_enum, default_value = "json")]
    format: StatsFormat,
}

pub fn run(args: StatsArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let stats = db.stats();
    match args.format {
        StatsFormat::Json => println!("{:#}", stats.to_json()),
        StatsFormat::Prometheus => print!("{}", stats.prometheus_text()),
    }
    let path = args.db.path().display();
    db.close().map_err(|e| CliError(format!("{path}: close: {e}")))
}
