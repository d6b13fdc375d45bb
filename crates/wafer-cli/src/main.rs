//! The `wafer` command. Thin: parses flags and calls the libraries; each subcommand lives in
//! `cmd/`. Errors print as one line and exit with status 1 (clap's own usage errors exit 2).
use std::process::ExitCode;

use clap::Parser;

mod cmd;

#[derive(Debug, Parser)]
#[command(
    name = "wafer",
    version,
    about = "Wafer: a flash-friendly storage engine and the flash SSD emulator that measures it"
)]
struct Cli {
    #[command(subcommand)]
    command: cmd::Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cmd::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wafer: error: {error}");
            ExitCode::FAILURE
        }
    }
}
