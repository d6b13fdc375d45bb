//! Every engine end to end at a tiny scale on a file: each starts, loads, runs and reports
//! nonzero figures. Each runs in a worker process of its own (`wafer bench peers-worker`; the
//! harness runs engines nowhere else), so the host bytes it reports are its process's alone.
//! Run inside a test process, /proc/self/io counted every test thread, and a load's
//! written-minus-cancelled bytes were cancelled out by another test's deleted dirty files
//! (reproduced in process: 2 of 6 loads of 1,500 records reported 0 bytes beside a thread
//! writing 32 MiB files and deleting them 100 ms later, 0 of 6 without it). The last test
//! here runs such a thread beside an engine.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wafer_bench::peers::{harness, EngineKind, PeerError, PeersConfig, PeersReport, Scale};
use wafer_bench::progress::Silent;
use wafer_bench::runner::spec::Stop;

/// Without the peers' libraries the tests skip, unless this is set (CI sets it).
const REQUIRE_ENV: &str = "WAFER_REQUIRE_PEERS";

fn config(engine: EngineKind, name: &str) -> PeersConfig {
    let dir = std::env::temp_dir().join(format!(
        "wafer-peers-{name}-{}-{}",
        std::process::id(),
        engine.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = Scale::Tiny.config(dir);
    config.engines = vec![engine];
    config.record_count = 1500;
    config.stop = Stop::Ops(400);
    // Loads through each engine's batch path (WriteBatch, one transaction); the run phases'
    // reads then find every record or fail. Single-insert loads: the speed and CLI tests.
    config.load_batch = 32;
    config.wafer_exe = Some(PathBuf::from(env!("CARGO_BIN_EXE_wafer")));
    config
}

/// The report, or None when the engine's library is missing and that is allowed.
fn run(config: &PeersConfig) -> Option<PeersReport> {
    let outcome = harness::run(config, &mut Silent, &mut |_| {});
    let _ = std::fs::remove_dir_all(&config.dir);
    match outcome {
        Err(PeerError::Missing { .. }) if std::env::var_os(REQUIRE_ENV).is_none() => {
            eprintln!("skipped: {:?} is not installed ({REQUIRE_ENV} unset)", config.engines);
            None
        }
        other => Some(other.unwrap()),
    }
}

fn smoke(engine: EngineKind) {
    let config = config(engine, "smoke");
    let Some(report) = run(&config) else { return };
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
fn smoke_rocksdb_blob() {
    smoke(EngineKind::RocksDbBlob);
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

/// A thread of this process writes 32 MiB files and deletes them 100 ms later (before
/// writeback: their pages count as written, then as cancelled, in this process's /proc/self/io)
/// while an engine loads in its worker: the load's host bytes are the worker's, untouched.
#[test]
fn a_test_deleting_dirty_files_beside_an_engine_does_not_cancel_its_bytes() {
    let mut config = config(EngineKind::WaferBest, "beside");
    config.workloads.clear();
    let scratch = config.dir.with_extension("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let stop = AtomicBool::new(false);
    let reports: Vec<_> = std::thread::scope(|s| {
        s.spawn(|| {
            let chunk = vec![7u8; 1 << 20];
            for i in 0..10_000u32 {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let path = scratch.join(format!("dirty-{i}"));
                let mut file = std::fs::File::create(&path).unwrap();
                for _ in 0..32 {
                    file.write_all(&chunk).unwrap();
                }
                drop(file);
                std::thread::sleep(Duration::from_millis(100));
                std::fs::remove_file(&path).unwrap();
            }
        });
        // Three loads: in process, two of six such loads reported 0 bytes.
        let reports = (0..3).map(|_| run(&config)).collect();
        stop.store(true, Ordering::Release);
        reports
    });
    let _ = std::fs::remove_dir_all(&scratch);
    for report in reports.into_iter().flatten() {
        let load = &report.rows[0];
        assert_eq!((load.phase.as_str(), load.ops), ("load", 1500));
        // The records alone are 1.5 MB; in process the load wrote 3.7-4.0 MB (WAL and pages).
        let records = 1500 * u64::from(config.value_size_bytes);
        assert!(load.host_write_bytes >= records, "{load:?}");
    }
}
