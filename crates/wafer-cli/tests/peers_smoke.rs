//! Every engine end to end at a tiny scale on a file: each starts, loads, runs and reports
//! nonzero figures. Each runs in a worker process of its own (`wafer bench peers-worker`, as
//! the CLI runs them), so the host bytes it reports are its process's alone: run inside the
//! test process, /proc/self/io counted every test thread, and a load's written-minus-cancelled
//! bytes could be cancelled out by another test's deleted files.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use wafer_bench::peers::{harness, EngineKind, PeerError, Scale};
use wafer_bench::progress::Silent;
use wafer_bench::runner::spec::Stop;

/// Without the peers' libraries the tests skip, unless this is set (CI sets it).
const REQUIRE_ENV: &str = "WAFER_REQUIRE_PEERS";

fn smoke(engine: EngineKind) {
    let dir = std::env::temp_dir().join(format!(
        "wafer-peers-smoke-{}-{}",
        std::process::id(),
        engine.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = Scale::Tiny.config(dir.clone());
    config.engines = vec![engine];
    config.record_count = 1500;
    config.stop = Stop::Ops(400);
    config.wafer_exe = Some(PathBuf::from(env!("CARGO_BIN_EXE_wafer")));
    let outcome = harness::run(&config, &mut Silent, &mut |_| {});
    let _ = std::fs::remove_dir_all(&dir);
    let report = match outcome {
        Err(PeerError::Missing { .. }) if std::env::var_os(REQUIRE_ENV).is_none() => {
            eprintln!("skipped: {} is not installed ({REQUIRE_ENV} unset)", engine.name());
            return;
        }
        other => other.unwrap(),
    };
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let phases = 1 + config.workloads.len() * config.distributions.len();
    assert_eq!(report.rows.len(), phases, "{:?}", report.rows);
    let settings = &report.engines[engine.name()];
    assert!(settings["dir_used_peak_bytes"].as_u64().unwrap() > 0, "{settings}");
    for r in &report.rows {
        assert!(r.ops > 0 && r.ops_per_sec > 0.0 && r.elapsed_s > 0.0, "{r:?}");
        assert_eq!(r.p50_us.is_some(), r.phase != "load", "{r:?}");
    }
    let load = &report.rows[0];
    assert_eq!((load.phase.as_str(), load.ops), ("load", 1500));
    assert!(load.host_write_bytes > 0, "the load wrote nothing to the host: {load:?}");
    let table = wafer_bench::peers::table::markdown(&report);
    assert_eq!(table.lines().count(), 2 + phases, "{table}");
}

#[test]
fn smoke_wafer_in_place() {
    smoke(EngineKind::WaferInPlace);
}

#[test]
fn smoke_wafer_out_of_place() {
    smoke(EngineKind::WaferOutOfPlace);
}

#[test]
fn smoke_wafer_best() {
    smoke(EngineKind::WaferBest);
}

#[test]
fn smoke_rocksdb() {
    smoke(EngineKind::RocksDb);
}

#[test]
fn smoke_lmdb() {
    smoke(EngineKind::Lmdb);
}

#[test]
fn smoke_wiredtiger() {
    smoke(EngineKind::WiredTiger);
}

#[test]
fn smoke_postgres() {
    smoke(EngineKind::Postgres);
}
