//! `wafer demo`: what a new user runs first. An emulated SSD (512 MiB of flash, 7% OP), filled to
//! 90% by YCSB records, YCSB-A updates with zipf 0.8 and a buffer pool of 10% of the dataset,
//! once per write mode this build has; prints DB, SSD and total WAF side by side with the rows
//! 000 publishes in its Table 1.
use std::path::PathBuf;

use clap::Args;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Seconds instead of tens of seconds: the 8 MiB `tiny` emulator at 85% fill (smoke runs,
    /// CI).
    #[arg(long)]
    quick: bool,
    /// Write each run's report as DIR/table1-<row>.json (`wafer report plot` draws them).
    #[arg(long, value_name = "DIR")]
    json_dir: Option<PathBuf>,
    /// Also write the whole result as one self-contained HTML report (tables, charts, machine).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// No live status line.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: DemoArgs) -> Result<(), CliError> {
    let scale = if args.quick { "tiny" } else { "demo" };
    let outputs = super::experiment::Outputs {
        json_dir: args.json_dir.as_deref(),
        html: args.html.as_deref(),
        quiet: args.quiet,
    };
    super::experiment::table1_at(scale, &outputs)
}
