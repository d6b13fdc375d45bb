//! Subcommands. Each module owns its clap arguments and returns a one-line error.
pub mod emu;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The flash SSD emulator: fio-like jobs, trace replay, presets.
    Emu(emu::EmuArgs),
}

/// A failed command: the message is printed after `wafer: error: `.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(error: E) -> CliError {
        CliError(error.to_string())
    }
}

pub fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Emu(args) => emu::run(args),
    }
}
