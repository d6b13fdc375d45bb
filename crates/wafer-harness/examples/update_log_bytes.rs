//! Where an update's log and metadata bytes go: loads 1000-byte values into an out-of-place
//! database set up as the peers comparison's raw rows are (LZ4, packing, GDT, NoWA, a 100 MiB
//! log checkpointed every quarter, `Durability::None` with a sync every 10,000 updates), then
//! updates them from two threads and prints bytes per update by where they went.
//!
//! `cargo run --release -p wafer-harness --example update_log_bytes -- [RECORDS] [UPDATES]
//! [zipf|uniform] [KEY=VALUE ...]`, e.g. `-- 200000 900000 zipf blob_threshold=512
//! max_fill_percent=250`. The files go to `$WAFER_PROBE_DIR` (default: a new directory under
//! the temp directory; use a tmpfs such as /dev/shm to keep the disk out of it), and stay
//! there when `WAFER_PROBE_KEEP` is set.
use std::sync::Arc;
use wafer::device::WritePurpose;
use wafer::{Db, DbStats};
use wafer_harness::runner::{setup, BenchConfig};
use wafer_workloads::dist::{Distribution, Rng};
use wafer_workloads::values::{ValueGenerator, ValueSpec};

/// Table 1's and the peers' setting, on a data file the size of the raw rows' device.
const BASE: [&str; 12] = [
    "compression=lz4",
    "packing=true",
    "placement=gdt",
    "nowa=true",
    "open_zones=16",
    "zones_per_gc_unit=16",
    "durability=none",
    "wal_capacity_bytes=104857600",
    "checkpoint_log_bytes=26214400",
    "file_capacity_bytes=444596224",
    "gc_unit_bytes=2097152",
    "ssd_spare_bytes=78643200",
];
const VALUE_BYTES: u32 = 1000;
/// The YCSB workloads' default share of random bytes in a value.
const RANDOM_SHARE: f64 = 0.39;
const SYNC_EVERY_UPDATES: u64 = 10_000;
const THREADS: u64 = 2;

fn key(i: u64) -> Vec<u8> {
    format!("user{:020}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000_000_000_000).into_bytes()
}

fn value(values: &ValueGenerator, i: u64, version: u64) -> Vec<u8> {
    values.value(&ValueSpec { seed: i ^ (version << 32), len_bytes: VALUE_BYTES })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let records: u64 = args.first().map_or(Ok(200_000), |s| s.parse())?;
    let updates: u64 = args.get(1).map_or(Ok(records), |s| s.parse())?;
    let dist = match args.get(2).map(String::as_str) {
        None | Some("zipf") => Distribution::YCSB_ZIPFIAN,
        Some("uniform") => Distribution::Uniform,
        Some(other) => return Err(format!("distribution `{other}`: zipf or uniform").into()),
    };
    let mut settings: Vec<String> = BASE.iter().map(|s| s.to_string()).collect();
    settings.extend(args.iter().skip(3).cloned());
    let bench = BenchConfig {
        write_mode: Some("out-of-place".into()),
        engine: BenchConfig::settings(&settings)?,
        ..BenchConfig::default()
    };
    let options = setup::engine_options(&bench)?;
    let dir = match std::env::var_os("WAFER_PROBE_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("wafer-update-log-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("probe.db");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(dir.join("probe.db.wal"));
    let db = Arc::new(Db::open(&path, options)?);
    let values = ValueGenerator::new(RANDOM_SHARE)?;
    let tree = db.tree("usertable")?;
    for i in 0..records {
        tree.put(&key(i), &value(&values, i, 0))?;
        if i % SYNC_EVERY_UPDATES == 0 {
            db.sync()?;
        }
    }
    db.sync()?;
    let before = db.stats();
    let result: Result<(), String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (db, tree, values) = (db.clone(), tree.clone(), &values);
                scope.spawn(move || -> Result<(), String> {
                    let mut chooser = dist.chooser(records).map_err(|e| e.to_string())?;
                    let mut rng = Rng::for_thread(7, thread);
                    for u in 0..updates / THREADS {
                        let i = chooser.next(&mut rng);
                        let v = value(values, i, u * THREADS + thread + 1);
                        tree.put(&key(i), &v).map_err(|e| e.to_string())?;
                        if thread == 0 && u % SYNC_EVERY_UPDATES == 0 {
                            db.sync().map_err(|e| e.to_string())?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| "a thread panicked".to_string())?)
    });
    result?;
    db.sync()?;
    report(&before, &db.stats(), updates);
    if std::env::var_os("WAFER_PROBE_KEEP").is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

fn report(a: &DbStats, b: &DbStats, updates: u64) {
    let per = |x: u64, y: u64| y.saturating_sub(x) as f64 / updates as f64;
    if let (Some(w0), Some(w1)) = (&a.wal, &b.wal) {
        println!(
            "log records per update      {:.2}",
            per(w0.records_appended, w1.records_appended)
        );
        println!(
            "log payload B per update    {:.1}",
            per(w0.payload_bytes_appended, w1.payload_bytes_appended)
        );
        println!(
            "engine log B per update     {:.1}",
            per(w0.device_bytes_written, w1.device_bytes_written)
        );
        println!("log flushes                 {}", w1.flushes - w0.flushes);
    }
    if let (Some(x), Some(y)) = (&a.blobs, &b.blobs) {
        println!("free-extent folds           {}", y.folds - x.folds);
    }
    println!("checkpoints                 {}", b.checkpoints - a.checkpoints);
    if let (Some(x), Some(y)) = (&a.out_of_place, &b.out_of_place) {
        let n = y.snapshots - x.snapshots;
        let bytes = y.snapshot_bytes - x.snapshot_bytes;
        println!("map snapshots               {n}, {} KiB each", bytes / n.max(1) / 1024);
        println!("map journal flushes         {}", y.journal_flushes - x.journal_flushes);
    }
    for (name, x, y) in [("data file", &a.io, &b.io), ("log file", &a.wal_io, &b.wal_io)] {
        let (Some(x), Some(y)) = (x, y) else { continue };
        let parts: Vec<String> = WritePurpose::ALL
            .iter()
            .map(|&p| (p, per(x.write_bytes[p as usize], y.write_bytes[p as usize])))
            .filter(|(_, v)| *v > 0.0)
            .map(|(p, v)| format!("{p:?} {v:.1}"))
            .collect();
        println!("{name} B per update: {}", parts.join(", "));
    }
}
