//! The comparison run: every engine through the same phases, one after another, rounds
//! interleaved (round r starts at engine r), each engine in a fresh directory it is the only
//! user of; rows of figures per engine, phase and distribution.

use std::path::PathBuf;
use std::time::Duration;

use super::procio::HostIo;
use super::{Durability, EngineKind, Peer, PeerError, PeerSetup};
use crate::dist::Distribution;
use crate::progress::Progress;
use crate::runner::{self, RunSpec, Stop, Warmup};
use crate::ycsb::{KeyFormat, Workload, WorkloadSpec};

pub const PEERS_SCHEMA: &str = "wafer-bench/peers";
pub const PEERS_VERSION: u32 = 1;
/// Bound on rounds: each runs every engine through every phase.
pub const ROUNDS_MAX: u32 = 100;

/// Preset sizes of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// CI's smoke test: every engine starts, loads, runs and reports, in seconds.
    Tiny,
    /// Dataset 8x the cache, 15 s per phase: a few minutes per engine.
    Small,
    /// 4 GiB-class dataset... see `config`: 1 GiB of records, 8x the cache, 60 s per phase.
    Full,
}

impl Scale {
    pub fn parse(text: &str) -> Result<Scale, String> {
        match text.trim() {
            "tiny" => Ok(Scale::Tiny),
            "small" => Ok(Scale::Small),
            "full" => Ok(Scale::Full),
            other => Err(format!("scale `{other}`: expected tiny, small or full")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Full => "full",
        }
    }

    /// The preset: records of 1000-byte values (YCSB's record), the cache an eighth of the
    /// data (a quarter at tiny scale, where the engines' fixed overheads dominate anyway).
    pub fn config(&self, dir: PathBuf) -> PeersConfig {
        let (records, cache_bytes, stop) = match self {
            Scale::Tiny => (4_000, 1 << 20, Stop::Ops(2_000)),
            Scale::Small => (200_000, 24 << 20, Stop::Duration(Duration::from_secs(15))),
            Scale::Full => (1_000_000, 128 << 20, Stop::Duration(Duration::from_secs(60))),
        };
        PeersConfig {
            scale: self.name().to_string(),
            engines: EngineKind::ALL.to_vec(),
            record_count: records,
            value_size_bytes: crate::ycsb::YCSB_RECORD_BYTES,
            cache_bytes,
            threads: 2,
            durability: Durability::Lazy,
            stop,
            distributions: vec![Distribution::YCSB_ZIPFIAN, Distribution::Uniform],
            workloads: vec![Workload::A, Workload::B, Workload::C, Workload::F],
            rounds: 1,
            dir,
            seed: 0x5EED,
            keep: false,
            key_format: KeyFormat::default(),
            direct_io: false,
        }
    }
}

/// One comparison: what every engine gets.
#[derive(Debug, Clone, PartialEq)]
pub struct PeersConfig {
    pub scale: String,
    pub engines: Vec<EngineKind>,
    pub record_count: u64,
    pub value_size_bytes: u32,
    pub cache_bytes: u64,
    pub threads: u32,
    pub durability: Durability,
    /// When each run phase (A, B, C, F) ends.
    pub stop: Stop,
    pub distributions: Vec<Distribution>,
    pub workloads: Vec<Workload>,
    pub rounds: u32,
    /// Engines' directories go under it (`round-R/ENGINE`), removed after each engine unless
    /// `keep`.
    pub dir: PathBuf,
    pub seed: u64,
    pub keep: bool,
    /// How key numbers become keys: hashed (random insert order) or ordered (sorted load),
    /// and their width.
    pub key_format: KeyFormat,
    /// Engines that can bypass the page cache do (Wafer: O_DIRECT; RocksDB: direct reads and
    /// direct flush/compaction); LMDB maps its file and cannot.
    pub direct_io: bool,
}

impl PeersConfig {
    pub fn validate(&self) -> Result<(), PeerError> {
        let bad = |m: String| Err(PeerError::Config(m));
        // No workload: the load alone is measured.
        if self.engines.is_empty() || (!self.workloads.is_empty() && self.distributions.is_empty())
        {
            return bad("give at least one engine, and a distribution for the workloads".into());
        }
        if !(1..=ROUNDS_MAX).contains(&self.rounds) {
            return bad(format!("rounds must be in 1..={ROUNDS_MAX}"));
        }
        if self.record_count < 2 || self.cache_bytes < (64 << 10) {
            return bad("need at least 2 records and a 64 KiB cache".into());
        }
        if !(1..=wafer::page::node::MAX_VALUE_BYTES as u32).contains(&self.value_size_bytes) {
            return bad(format!(
                "value size must be in 1..={} (Wafer's largest value)",
                wafer::page::node::MAX_VALUE_BYTES
            ));
        }
        if self.workloads.iter().any(|w| matches!(w, Workload::D | Workload::E)) {
            return bad("the comparison runs A, B, C and F (D and E insert or scan)".into());
        }
        Ok(())
    }

    fn setup(&self, dir: PathBuf) -> PeerSetup {
        PeerSetup {
            dir,
            cache_bytes: self.cache_bytes,
            threads: self.threads,
            durability: self.durability,
            record_count: self.record_count,
            value_size_bytes: self.value_size_bytes,
            key_bytes: self.key_bytes(),
            direct_io: self.direct_io,
        }
    }

    /// Bytes of one key: ordered keys are as wide as the largest key number needs (at least
    /// the padding), hashed ones the format's fixed width.
    fn key_bytes(&self) -> u32 {
        if self.key_format.hashed {
            self.key_format.nominal_len_bytes() as u32
        } else {
            self.key_format.key(self.record_count.saturating_sub(1)).as_bytes().len() as u32
        }
    }

    fn workload(&self, workload: Workload, distribution: Distribution) -> WorkloadSpec {
        let mut spec = workload.spec(self.record_count);
        spec.value_size_bytes = self.value_size_bytes;
        spec.request_distribution = distribution;
        spec.key_format = self.key_format;
        spec
    }

    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "scale": self.scale,
            "engines": self.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            "record_count": self.record_count,
            "value_size_bytes": self.value_size_bytes,
            "dataset_bytes": self.setup(PathBuf::new()).dataset_bytes(),
            "cache_bytes": self.cache_bytes,
            "threads": self.threads,
            "durability": self.durability,
            "phase_stop": self.stop.describe(),
            "distributions": self.distributions.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "workloads": self.workloads.iter().map(|w| w.name()).collect::<Vec<_>>(),
            "rounds": self.rounds,
            "dir": self.dir,
            "seed": self.seed,
            "key_format": self.key_format,
            "direct_io": self.direct_io,
        })
    }
}

/// One engine in one phase of one round.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub round: u32,
    pub engine: String,
    /// `file` (a directory on the host's filesystem) or `emu:PRESET`.
    pub device: String,
    /// `load` or the workload (`ycsb-a`).
    pub phase: String,
    /// The request distribution (`-` for the load).
    pub distribution: String,
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    pub host_write_bytes_per_op: f64,
    pub host_read_bytes_per_op: f64,
    /// Emulated SSD only: flash bytes programmed per operation and total WAF.
    pub flash_bytes_per_op: Option<f64>,
    pub total_waf: Option<f64>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PeersReport {
    pub schema: String,
    pub version: u32,
    pub config: serde_json::Value,
    /// Each engine's settings as it reported them after opening.
    pub engines: serde_json::Map<String, serde_json::Value>,
    pub rows: Vec<Row>,
}

/// Runs the comparison; `on_row` sees each row as it is measured (for a live table).
pub fn run(
    config: &PeersConfig,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<PeersReport, PeerError> {
    config.validate()?;
    let mut report = PeersReport {
        schema: PEERS_SCHEMA.into(),
        version: PEERS_VERSION,
        config: config.describe(),
        engines: serde_json::Map::new(),
        rows: Vec::new(),
    };
    // Only what this run creates is removed afterwards: never a directory the user had.
    let dir_existed = config.dir.exists();
    let outcome = run_rounds(config, &mut report, progress, on_row);
    if !config.keep {
        for round in 0..config.rounds {
            let _ = std::fs::remove_dir(config.dir.join(format!("round-{round}")));
        }
        if !dir_existed {
            let _ = std::fs::remove_dir(&config.dir);
        }
    }
    outcome.map(|()| report)
}

/// Every round: each engine in its own fresh directory, removed after it unless `keep`.
fn run_rounds(
    config: &PeersConfig,
    report: &mut PeersReport,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<(), PeerError> {
    for round in 0..config.rounds {
        let n = config.engines.len();
        for i in 0..n {
            let engine = config.engines[(i + round as usize) % n];
            let dir = config.dir.join(format!("round-{round}")).join(engine.name());
            if dir.exists() {
                return Err(PeerError::Config(format!(
                    "{} exists; the harness needs fresh directories (remove it)",
                    dir.display()
                )));
            }
            std::fs::create_dir_all(&dir).map_err(|e| PeerError::io(&dir, e))?;
            let outcome = run_engine(
                config,
                engine,
                round,
                &config.setup(dir.clone()),
                progress,
                &mut |row| {
                    on_row(row);
                    report.rows.push(row.clone());
                },
            );
            if !config.keep {
                // Best effort: a leftover directory costs disk, not correctness.
                let _ = std::fs::remove_dir_all(&dir);
            }
            let settings = outcome?;
            report.engines.insert(engine.name().to_string(), settings);
        }
    }
    Ok(())
}

/// One engine: open, load, every distribution's workloads, close. Returns its settings.
fn run_engine(
    config: &PeersConfig,
    engine: EngineKind,
    round: u32,
    setup: &PeerSetup,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<serde_json::Value, PeerError> {
    let peer = engine.open(setup)?;
    let settings = peer.target().describe();
    let failed = |phase: &str, e: &dyn std::fmt::Display| PeerError::Run {
        engine: engine.name().into(),
        phase: phase.into(),
        message: e.to_string(),
    };
    let mut spec = RunSpec {
        label: format!("{} load", engine.name()),
        workload: config.workload(Workload::A, Distribution::Uniform),
        threads: config.threads,
        seed: config.seed,
        load: true,
        fill_target_bytes: None,
        stop: Stop::Ops(1),
        warmup: Warmup::None,
        interval: Duration::from_secs(1),
    };
    let measured = measure(peer.as_ref(), || {
        runner::load_open(peer.target(), &spec, progress).map_err(|e| failed("load", &e))
    })?;
    let (figures, io) = measured;
    on_row(&row(engine, round, "load", "-", figures.ops, figures.elapsed_s, None, io));
    spec.load = false;
    spec.stop = config.stop;
    for (d, distribution) in config.distributions.iter().enumerate() {
        for (w, workload) in config.workloads.iter().enumerate() {
            spec.workload = config.workload(*workload, *distribution);
            spec.label = format!("{} {} {distribution}", engine.name(), workload.name());
            spec.seed = config.seed ^ ((d * 16 + w + 1) as u64);
            let (report, io) = measure(peer.as_ref(), || {
                runner::run_open(peer.target(), &spec, serde_json::Value::Null, progress)
                    .map_err(|e| failed(workload.name(), &e))
            })?;
            let s = &report.summary;
            let latency = report.latency.get("all").copied();
            let dist = distribution_name(distribution);
            on_row(&row(engine, round, workload.name(), &dist, s.ops, s.elapsed_s, latency, io));
        }
    }
    peer.target().close().map_err(|e| failed("close", &e))?;
    drop(peer);
    Ok(settings)
}

/// Runs `phase` between two readings of the peer's host I/O.
fn measure<T>(
    peer: &dyn Peer,
    phase: impl FnOnce() -> Result<T, PeerError>,
) -> Result<(T, HostIo), PeerError> {
    let before = peer.host_io()?;
    let out = phase()?;
    let after = peer.host_io()?;
    Ok((out, before.until(&after)))
}

/// `zipf` for YCSB's (scrambled) zipfian, else the distribution's own name.
fn distribution_name(d: &Distribution) -> String {
    match d {
        Distribution::ScrambledZipfian { .. } => "zipf".into(),
        other => other.to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    engine: EngineKind,
    round: u32,
    phase: &str,
    distribution: &str,
    ops: u64,
    elapsed_s: f64,
    latency: Option<crate::metrics::HistogramSummary>,
    io: HostIo,
) -> Row {
    let per_op = |bytes: u64| if ops == 0 { 0.0 } else { bytes as f64 / ops as f64 };
    let us = |ns: u64| ns as f64 / 1000.0;
    Row {
        round,
        engine: engine.name().into(),
        device: "file".into(),
        phase: phase.into(),
        distribution: distribution.into(),
        ops,
        elapsed_s,
        ops_per_sec: if elapsed_s > 0.0 { ops as f64 / elapsed_s } else { 0.0 },
        p50_us: latency.map(|l| us(l.p50_ns)),
        p99_us: latency.map(|l| us(l.p99_ns)),
        p999_us: latency.map(|l| us(l.p999_ns)),
        host_write_bytes: io.net_write_bytes(),
        host_read_bytes: io.read_bytes,
        host_write_bytes_per_op: per_op(io.net_write_bytes()),
        host_read_bytes_per_op: per_op(io.read_bytes),
        flash_bytes_per_op: None,
        total_waf: None,
    }
}
