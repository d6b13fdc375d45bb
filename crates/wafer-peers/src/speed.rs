//! The engine-speed comparison: Wafer in place and out of place beside RocksDB and
//! LMDB on three suites, rounds interleaved (round r starts each suite at engine r), and the
//! ratios to them (docs/results/speed.md), from the minimum and the median over rounds.
//!
//! ```text
//!  random  250k x 1000 B, hashed keys (random insert order), cache 1/6 of the data, O_DIRECT
//!          where the engine can: load, then YCSB-A uniform
//!  sorted  the same records inserted in key order: load only
//!  memory  16-byte keys, 100-byte values, cache 4x the data: load, YCSB-C and YCSB-A uniform
//! ```
//!
//! Each suite is one [`PeersConfig`] run through the peers harness for one round at a time, so
//! every engine gets the same directory kind, threads and durability as in `bench peers`, and
//! runs as there in a worker process of its own (the caller gives the `wafer` binary).

use std::path::PathBuf;
use std::time::Duration;

use super::harness::{self, PeersConfig, Row};
use super::table::median;
use super::{Durability, EngineKind, PeerError};
use wafer_harness::progress::Progress;
use wafer_harness::runner::Stop;
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::{KeyFormat, Workload};

/// Engines of the comparison, in round-0 order.
pub const ENGINES: [EngineKind; 5] = [
    EngineKind::WaferInPlace,
    EngineKind::WaferOutOfPlace,
    EngineKind::WaferBlobs,
    EngineKind::RocksDb,
    EngineKind::Lmdb,
];
/// Ordered keys padded to 12 digits: `user` + 12 = 16 bytes.
const KEY_16_BYTES: KeyFormat = KeyFormat { hashed: false, zero_padding: 12 };

/// Sizes of a speed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeedScale {
    /// Seconds per suite: CI's smoke test of the command.
    Tiny,
    /// The comparison's full sizes: 250k 1000-byte records, 6x the cache; 20 s phases.
    Issue,
}

impl SpeedScale {
    pub fn parse(text: &str) -> Result<SpeedScale, String> {
        match text.trim() {
            "tiny" => Ok(SpeedScale::Tiny),
            "issue" => Ok(SpeedScale::Issue),
            other => Err(format!("scale `{other}`: expected tiny or issue")),
        }
    }
}

/// One suite: its name and the harness configuration it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: &'static str,
    pub config: PeersConfig,
}

/// The three suites at `scale`, their files under `dir/SUITE`.
pub fn suites(scale: SpeedScale, dir: PathBuf, engines: &[EngineKind]) -> Vec<Suite> {
    let (records, small_records, stop) = match scale {
        SpeedScale::Tiny => (3_000, 5_000, Stop::Ops(1_000)),
        SpeedScale::Issue => (250_000, 500_000, Stop::Duration(Duration::from_secs(20))),
    };
    let base = |name: &str| {
        let mut c = harness::Scale::Small.config(dir.join(name));
        c.scale = format!("speed-{name}");
        c.engines = engines.to_vec();
        c.record_count = records;
        c.value_size_bytes = wafer_workloads::ycsb::YCSB_RECORD_BYTES;
        c.threads = 2;
        c.durability = Durability::Lazy;
        c.stop = stop;
        c.distributions = vec![Distribution::Uniform];
        c.rounds = 1;
        c
    };
    let mut random = base("random");
    let dataset_bytes = random.record_count * u64::from(random.value_size_bytes + 23);
    random.cache_bytes = (dataset_bytes / 6).max(1 << 20);
    random.workloads = vec![Workload::A];
    random.direct_io = true;
    let mut sorted = random.clone();
    sorted.scale = "speed-sorted".into();
    sorted.dir = dir.join("sorted");
    sorted.key_format = KeyFormat { hashed: false, ..KeyFormat::default() };
    sorted.workloads = Vec::new();
    let mut memory = base("memory");
    memory.record_count = small_records;
    memory.value_size_bytes = 100;
    memory.key_format = KEY_16_BYTES;
    memory.cache_bytes = (small_records * 116 * 4).max(16 << 20);
    memory.workloads = vec![Workload::C, Workload::A];
    vec![
        Suite { name: "random", config: random },
        Suite { name: "sorted", config: sorted },
        Suite { name: "memory", config: memory },
    ]
}

/// Runs `rounds` rounds of every suite; round r rotates each suite's engines by r. Rows carry
/// their suite in `phase` (`random/load`, `memory/ycsb-c`).
pub fn run(
    suites: &[Suite],
    rounds: u32,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>, PeerError> {
    if !(1..=harness::ROUNDS_MAX).contains(&rounds) {
        return Err(PeerError::Config(format!("rounds must be in 1..={}", harness::ROUNDS_MAX)));
    }
    // Only what this run creates is removed afterwards: never a directory the user had.
    let existed: Vec<bool> = suites
        .iter()
        .flat_map(|s| [s.config.dir.exists(), s.config.dir.parent().is_some_and(|p| p.exists())])
        .collect();
    let mut rows = Vec::new();
    for round in 0..rounds {
        for suite in suites {
            let mut config = suite.config.clone();
            let n = config.engines.len();
            config.engines.rotate_left(round as usize % n.max(1));
            config.dir = suite.config.dir.join(format!("r{round}"));
            config.seed ^= u64::from(round) << 32;
            let report = harness::run(&config, progress, &mut |_| {})?;
            if !report.failures.is_empty() {
                // A ratio over a missing engine's rows would compare nothing.
                return Err(PeerError::Config(format!(
                    "suite {}: {}",
                    suite.name,
                    report.failures.join("; ")
                )));
            }
            for mut row in report.rows {
                row.round = round;
                row.phase = format!("{}/{}", suite.name, row.phase);
                on_row(&row);
                rows.push(row);
            }
        }
    }
    // The harness removed each round's directory; the suites' (and their parent) go too when
    // empty (remove_dir never removes a directory with anything left in it).
    for (suite, existed) in suites.iter().zip(existed.chunks(2)) {
        if !existed[0] {
            let _ = std::fs::remove_dir(&suite.config.dir);
        }
        match suite.config.dir.parent() {
            Some(parent) if !existed[1] => {
                let _ = std::fs::remove_dir(parent);
            }
            _ => {}
        }
    }
    Ok(rows)
}

/// One engine in one phase: figures over the rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedSummary {
    pub phase: String,
    pub engine: String,
    pub rounds: usize,
    pub ops_per_sec_min: f64,
    pub ops_per_sec_median: f64,
    pub host_write_bytes_per_op_median: f64,
}

/// Rows grouped by phase and engine, phases and engines in the order first measured.
pub fn summarize(rows: &[Row]) -> Vec<SpeedSummary> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.phase.clone(), r.engine.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let phases: Vec<&String> = keys.iter().map(|k| &k.0).collect();
    let mut order = keys.clone();
    order.sort_by_key(|k| phases.iter().position(|p| **p == k.0));
    order
        .into_iter()
        .map(|(phase, engine)| {
            let g: Vec<&Row> =
                rows.iter().filter(|r| r.phase == phase && r.engine == engine).collect();
            let ops: Vec<f64> = g.iter().map(|r| r.ops_per_sec).collect();
            let written: Vec<f64> = g.iter().map(|r| r.host_write_bytes_per_op).collect();
            SpeedSummary {
                rounds: g.len(),
                ops_per_sec_min: ops.iter().copied().fold(f64::INFINITY, f64::min),
                ops_per_sec_median: median(ops),
                host_write_bytes_per_op_median: median(written),
                phase,
                engine,
            }
        })
        .collect()
}

/// `a / b`, or `-` when there is no `b`.
fn ratio(a: f64, b: Option<f64>) -> String {
    match b {
        Some(b) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// The markdown table: per phase and engine, ops/s (min, median), host bytes written per
/// operation, and the median ratios against RocksDB and LMDB in the same phase.
pub fn markdown(rows: &[Row]) -> String {
    let summaries = summarize(rows);
    let mut out = String::from(
        "| phase | engine | rounds | ops/s min | ops/s median | host write B/op | ops/s vs RocksDB | ops/s vs LMDB | write B/op vs RocksDB |\n\
         |---|---|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for s in &summaries {
        let peer = |name: &str| summaries.iter().find(|p| p.phase == s.phase && p.engine == name);
        let rocks = peer(EngineKind::RocksDb.name());
        let lmdb = peer(EngineKind::Lmdb.name());
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {} |\n",
            s.phase,
            s.engine,
            s.rounds,
            s.ops_per_sec_min,
            s.ops_per_sec_median,
            s.host_write_bytes_per_op_median,
            ratio(s.ops_per_sec_median, rocks.map(|p| p.ops_per_sec_median)),
            ratio(s.ops_per_sec_median, lmdb.map(|p| p.ops_per_sec_median)),
            ratio(
                s.host_write_bytes_per_op_median,
                rocks.map(|p| p.host_write_bytes_per_op_median)
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(phase: &str, engine: &str, round: u32, ops_per_sec: f64, written: f64) -> Row {
        Row {
            round,
            engine: engine.into(),
            device: "file".into(),
            phase: phase.into(),
            distribution: "-".into(),
            ops: 100,
            elapsed_s: 100.0 / ops_per_sec,
            ops_per_sec,
            p50_us: None,
            p99_us: None,
            p999_us: None,
            host_write_bytes: (written * 100.0) as u64,
            host_read_bytes: 0,
            host_write_bytes_per_op: written,
            host_read_bytes_per_op: 0.0,
            device_write_bytes_per_op: None,
            flash_bytes_per_op: None,
            ssd_waf: None,
            db_waf: None,
            total_waf: None,
            steady_flash_bytes_per_op: None,
            steady_ssd_waf: None,
            flash_breakdown: None,
        }
    }

    #[test]
    fn ratios_use_medians_of_the_same_phase() {
        let rows = vec![
            row("random/load", "wafer-in-place", 0, 100.0, 3000.0),
            row("random/load", "rocksdb", 0, 400.0, 1000.0),
            row("random/load", "wafer-in-place", 1, 300.0, 1000.0),
            row("random/load", "rocksdb", 1, 200.0, 3000.0),
            row("random/load", "wafer-in-place", 2, 200.0, 2000.0),
            row("random/load", "rocksdb", 2, 300.0, 2000.0),
            row("memory/ycsb-c", "lmdb", 0, 50.0, 0.0),
        ];
        let s = summarize(&rows);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].ops_per_sec_min, s[0].ops_per_sec_median), (100.0, 200.0));
        assert_eq!(s[1].ops_per_sec_median, 300.0);
        let table = markdown(&rows);
        // 200 / 300 of ops, 2000 / 2000 of bytes; no LMDB row in this phase.
        assert!(
            table.contains(
                "| random/load | wafer-in-place | 3 | 100 | 200 | 2000 | 0.67x | - | 1.00x |"
            ),
            "{table}"
        );
    }

    #[test]
    fn suites_have_the_issue_sizes() {
        let s = suites(SpeedScale::Issue, PathBuf::from("/x"), &ENGINES);
        let names: Vec<_> = s.iter().map(|s| s.name).collect();
        assert_eq!(names, ["random", "sorted", "memory"]);
        assert_eq!(s[0].config.record_count, 250_000);
        assert!(s[0].config.direct_io && s[1].config.workloads.is_empty());
        // 16-byte keys in memory.
        assert_eq!(KEY_16_BYTES.key(499_999).as_bytes().len(), 16);
        for suite in &s {
            // Engines run in worker processes only: the CLI gives its own binary.
            assert!(suite.config.validate().is_err());
            let mut config = suite.config.clone();
            config.wafer_exe = Some("/nonexistent/wafer".into());
            config.validate().unwrap();
        }
    }
}
