#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! The engine's `tracing` spans reach an installed subscriber: open, recovery, commit,
//! eviction batch, checkpoint and GC cycle. A subscriber of its own (names only), installed
//! globally so the store's GC thread reports too; one test in this binary for that reason.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use wafer::{Db, Options};

#[derive(Default)]
struct Names {
    next_id: AtomicU64,
    seen: Mutex<BTreeMap<&'static str, u64>>,
}

#[derive(Clone)]
struct Counting(Arc<Names>);

impl Subscriber for Counting {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        *self.0.seen.lock().unwrap().entry(span.metadata().name()).or_default() += 1;
        Id::from_u64(1 + self.0.next_id.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn commit_checkpoint_eviction_gc_and_recovery_open_spans() {
    let names = Arc::new(Names::default());
    tracing::subscriber::set_global_default(Counting(names.clone())).unwrap();
    let path = std::env::temp_dir().join(format!("wafer-spans-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
    let mut options = Options::test_min().out_of_place();
    options.file_capacity_bytes = 8 << 20;
    let db = Db::open(&path, options.clone()).unwrap();
    let t = db.tree("t").unwrap();
    // Overwrites of a few thousand keys on an 8 MiB device: GC turns zones over.
    for round in 0..12u32 {
        for i in 0..2000u32 {
            t.put(&i.to_be_bytes(), &[round as u8; 200]).unwrap();
        }
        db.checkpoint().unwrap();
    }
    let gc_cycles = db.stats().out_of_place.unwrap().gc_cycles;
    drop((t, db));
    let db = Db::open(&path, options).unwrap();
    assert!(db.check().unwrap().is_clean());
    drop(db);
    let seen = names.seen.lock().unwrap().clone();
    for name in ["wafer.open", "wafer.recovery", "wafer.commit", "wafer.checkpoint"] {
        assert!(seen.get(name).copied().unwrap_or(0) > 0, "{name} missing: {seen:?}");
    }
    assert!(seen["wafer.commit"] >= 24_000, "{seen:?}");
    assert!(seen.get("wafer.eviction_batch").copied().unwrap_or(0) > 0, "{seen:?}");
    assert!(gc_cycles > 0, "the workload should run GC: {seen:?}");
    assert!(seen.get("wafer.gc_cycle").copied().unwrap_or(0) >= gc_cycles, "{seen:?}");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
}
