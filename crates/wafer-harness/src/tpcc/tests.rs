//! TPC-C on the engine: the consistency conditions hold after runs in every write mode (plain
//! and steady-size), after a power cut in the middle of the terminals' transactions and
//! recovery, and `bench::run` reports what it ran. One warehouse of the mini cardinality and a
//! few hundred transactions each, so every test takes a second or two.
use super::check::check;
use super::*;
use crate::metrics::CounterSnapshot;
use crate::runner::engine::WriteModeChoice;
use std::sync::Arc;
use wafer::device::{Device, FaultDevice, MemoryDevice};
use wafer::{Db, Options};

fn spec(transactions: u64, steady: bool) -> TpccSpec {
    TpccSpec {
        warehouses: 2,
        cardinality: Cardinality::mini(),
        threads: 3,
        steady,
        stop: TpccStop::Transactions(transactions),
        interval: Duration::from_secs(3600),
        seed: 7,
        remote_item_percent: 1,
    }
}

fn options(mode: WriteModeChoice) -> Options {
    let mut o = Options::test_min();
    mode.apply(&mut o);
    // Big enough for a New-Order batch's pages, small enough to evict all the time.
    o.buffer_pool_bytes = 96 * 4096;
    o
}

fn no_counters() -> CounterSnapshot {
    CounterSnapshot::default()
}

fn open(data: Arc<dyn Device>, wal: Arc<dyn Device>, mode: WriteModeChoice) -> Db {
    Db::open_on_devices(data, wal, options(mode)).unwrap()
}

#[test]
fn every_write_mode_keeps_the_conditions_plain_and_steady() {
    for mode in WriteModeChoice::ALL {
        for steady in [false, true] {
            let db = open(
                Arc::new(MemoryDevice::new(24 << 20)),
                Arc::new(MemoryDevice::new(4 << 20)),
                mode,
            );
            let s = spec(400, steady);
            driver::load_all(&db, &s).unwrap();
            let loaded = check(&db, s.warehouses, steady).unwrap();
            assert!(loaded.passed(), "{mode:?} after load: {:?}", loaded.violations);
            let out = driver::run(&db, &s, &no_counters).unwrap();
            assert_eq!(out.counts.total(), 400, "{mode:?}");
            assert!(out.counts.completed.iter().all(|n| *n > 0), "{:?}", out.counts);
            let r = check(&db, s.warehouses, steady).unwrap();
            assert!(r.passed(), "{mode:?} steady {steady}: {:?}", r.violations);
            assert_eq!((r.districts, r.evaluated), (20, [2, 20, 20, 20]));
            if steady {
                // Delivered orders are gone: fewer orders than were ever entered.
                let orders = db.tree(keys::ORDER).unwrap().iter().count() as u64;
                assert!(orders < 20 * 30 + out.counts.completed[0], "{orders}");
            }
            db.close().unwrap();
        }
    }
}

#[test]
fn a_broken_invariant_is_reported() {
    let db = open(
        Arc::new(MemoryDevice::new(24 << 20)),
        Arc::new(MemoryDevice::new(4 << 20)),
        WriteModeChoice::InPlace,
    );
    let s = spec(0, false);
    driver::load_all(&db, &s).unwrap();
    // An order line without its order's count (3.3.2.4) and a new order beyond D_NEXT_O_ID
    // (3.3.2.2, 3.3.2.3).
    db.tree(keys::ORDER_LINE).unwrap().put(&keys::order_line(1, 3, 1, 99), b"\x01").unwrap();
    db.tree(keys::NEW_ORDER).unwrap().put(&keys::order(2, 4, 99), b"").unwrap();
    let r = check(&db, 2, false).unwrap();
    let found: Vec<&str> = r.violations.iter().map(|v| &v[..7]).collect();
    assert_eq!(found, vec!["3.3.2.4", "3.3.2.2", "3.3.2.3"], "{:?}", r.violations);
}

/// A power cut while the terminals run, then recovery: every committed transaction is whole
/// or absent, so the conditions hold on what the log and pages bring back.
#[test]
fn conditions_hold_after_a_power_cut_and_recovery() {
    for (i, mode) in [WriteModeChoice::InPlace, WriteModeChoice::OutOfPlace].into_iter().enumerate()
    {
        let data = Arc::new(FaultDevice::new(24 << 20));
        let wal = Arc::new(FaultDevice::new(4 << 20));
        let db = open(data.clone(), wal.clone(), mode);
        let s = spec(1_000_000, i == 1);
        driver::load_all(&db, &s).unwrap();
        // The log loses power some commits into the run; the data device with it.
        wal.crash_at_io(wal.io_count() + 150);
        let err = driver::run(&db, &s, &no_counters).unwrap_err();
        assert!(matches!(err, TpccError::Engine(_)), "{mode:?}: {err}");
        drop(db);
        let (data, wal) = (data.power_cut(11 + i as u64), wal.power_cut(12 + i as u64));
        let db = open(Arc::new(data), Arc::new(wal), mode);
        let r = check(&db, s.warehouses, s.steady).unwrap();
        assert!(r.passed(), "{mode:?} after recovery: {:?}", r.violations);
        let recovery = db.stats().recovery.expect("a WAL database recovers");
        assert!(recovery.redo.records > 0, "{recovery:?}");
    }
}

#[test]
fn bench_reports_throughput_flash_per_transaction_and_the_check() {
    let config = crate::runner::BenchConfig {
        device: Some("emu:tiny".into()),
        write_mode: Some("out-of-place".into()),
        buffer: Some("25%".into()),
        ..Default::default()
    };
    let s = TpccSpec { warehouses: 1, threads: 2, ..spec(300, true) };
    let report = bench::run(&config, &s, true).unwrap();
    assert_eq!(report.counts.total(), 300);
    assert!(report.tpmc > 0.0);
    assert!(report.check.as_ref().is_some_and(|c| c.passed()));
    let text = bench::render(&report);
    assert!(
        text.contains("tpmC") && text.contains("consistency 3.3.2.1-3.3.2.4: passed"),
        "{text}"
    );
    let json = report.to_json().unwrap();
    let back: bench::TpccReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.counts, report.counts);
    let bad = TpccSpec { warehouses: 0, ..s };
    assert!(bench::run(&config, &bad, false).is_err());
}
