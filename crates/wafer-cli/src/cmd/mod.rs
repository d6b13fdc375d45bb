//! Subcommands. Each module owns its clap arguments and returns a one-line error.
pub mod bench;
pub mod check;
pub mod demo;
pub mod dump;
pub mod emu;
mod emu_device;
mod emu_serve;
mod error;
pub mod experiment;
mod output;
pub mod peers;
pub mod profile;
pub mod raft;
pub mod report;
pub mod stats;
pub mod tune;

use clap::Subcommand;
pub use error::CliError;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job on an embedded default: an emulated 90%-full SSD, a small YCSB-A run per
    /// write mode, and the result table (Table 1 of 000 at demo scale).
    Demo(demo::DemoArgs),
    /// The flash SSD emulator: fio-like jobs, trace replay, presets.
    Emu(emu::EmuArgs),
    /// Engine benchmarks: YCSB over the emulator or a file.
    Bench(bench::BenchArgs),
    /// Check a database file: every tree, the free list and the space metadata.
    Check(check::CheckArgs),
    /// Write every tree of a database as a portable, checksummed stream (upgrades, salvage).
    Dump(dump::DumpArgs),
    /// Load a stream `wafer dump` wrote into a new database.
    Load(dump::LoadArgs),
    /// Copy a database into a new one (DST and DST.wal), consistent as of one commit; it
    /// checks with `wafer check DST`.
    Backup(dump::BackupArgs),
    /// A database's statistics (recovering it first, as any open does): JSON or Prometheus text.
    Stats(stats::StatsArgs),
    /// Charts and tables of benchmark reports.
    Report(report::ReportArgs),
    /// One-command reproductions of the papers' tables.
    Experiment(experiment::ExperimentArgs),
    /// 001's MQSSD device profiler: file benchmark over k threads and random fraction r, fitted
    /// costs s, beta, t, alpha per k and across k, a TOML profile and Figures 1, 3, 4.
    Profile(profile::ProfileArgs),
    /// Wafer's batch sizes chosen from an MQSSD device profile's cost terms (eviction batch,
    /// GC read batch), with the per-page costs behind each choice; the I/O depths that are
    /// constants are listed with the depth the model would give them.
    Tune(tune::TuneArgs),
    /// A replicated key-value service on Wafer (openraft, HTTP on loopback): one node, a
    /// local cluster, or a benchmark of one.
    Raft(raft::RaftArgs),
}

pub fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Demo(args) => demo::run(args),
        Command::Emu(args) => emu::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Check(args) => check::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Dump(args) => dump::dump(args),
        Command::Load(args) => dump::load(args),
        Command::Backup(args) => dump::backup(args),
        Command::Report(args) => report::run(args),
        Command::Experiment(args) => experiment::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Raft(args) => raft::run(args),
    }
}
