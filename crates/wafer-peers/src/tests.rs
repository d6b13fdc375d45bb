//! The harness's configuration, sizing and table arithmetic on made-up rows. Every engine end
//! to end (each starts, loads, runs and reports nonzero figures) is wafer-cli's
//! tests/peers_smoke.rs: each in a worker process of its own (the harness runs engines nowhere
//! else), so its host bytes are its own and not those of the other tests' threads.

use super::emu_device::EmuSpace;
use super::harness::{run, Row, Scale};
use super::table::summarize;
use super::*;

#[test]
fn device_specs_are_checked() {
    assert!(EmuDevice::parse("emu:ent", &[], EmuSpace::Preset, 0.9).is_ok());
    assert!(EmuDevice::parse("ent", &[], EmuSpace::Preset, 0.9).is_err());
    assert!(EmuDevice::parse("emu:nope", &[], EmuSpace::Preset, 0.9).is_err());
    assert!(EmuDevice::parse("emu:ent", &["op".into()], EmuSpace::Preset, 0.9).is_err());
    assert!(EmuDevice::parse("emu:ent", &[], EmuSpace::Preset, 1.5).is_err());
    for bad in ["dataset:0.5", "dataset:nan", "own:1.5", "own:x", "auto", "preset:1"] {
        assert!(EmuSpace::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(EmuSpace::parse("own:0.9").unwrap(), EmuSpace::DEFAULT);
    assert_eq!(EmuSpace::parse(" dataset:2.5").unwrap(), EmuSpace::PerDataset(2.5));
    let d =
        EmuDevice::parse("emu:ent", &["store=none".to_string()], EmuSpace::Preset, 0.9).unwrap();
    assert_eq!(d.config.store, flashemu::StoreKind::Memory, "a filesystem needs its bytes");
}

/// The device holds the asked multiple of the dataset, or the engine's files at the asked
/// share, with the fewest blocks per chip: one block fewer would not; `preset` keeps the
/// preset's geometry.
#[test]
fn the_emulated_ssd_is_sized_to_the_dataset() {
    let logical = |c: &flashemu::Config| c.layout().logical_blocks * flashemu::LBA_BYTES;
    let e = EmuDevice::parse("emu:ent", &[], EmuSpace::Own(0.8), 0.5).unwrap_err().to_string();
    assert!(e.contains("own:SHARE") && !e.contains("  "), "own and a fill: {e}");
    let own = EmuDevice::parse("emu:ent", &[], EmuSpace::Own(0.8), 0.0).unwrap();
    let footprint = 300_000_000u64;
    let sized = own.sized_config(1, Some(footprint)).unwrap();
    assert!(logical(&sized) as f64 * 0.8 >= footprint as f64);
    let mut smaller = sized.clone();
    smaller.geometry.blocks_per_chip -= 1;
    assert!((logical(&smaller) as f64) < footprint as f64 / 0.8 / 0.98 + (16 << 20) as f64);
    // A device of ~400 MiB: blocks made smaller until it has 128 superblocks, so GC's reserve
    // (4 of them) is 3% of it, not the 16 MiB superblocks' 14%.
    let layout = sized.layout();
    assert!(layout.superblock_count >= 128, "{layout:?}");
    assert!(sized.geometry.pages_per_block < own.config.geometry.pages_per_block);
    let reserved = u64::from(layout.reserved_superblocks * layout.slots_per_superblock);
    assert!(reserved * 25 < layout.physical_slots, "{layout:?}");
    let d = EmuDevice::parse("emu:ent", &[], EmuSpace::PerDataset(2.5), 0.0).unwrap();
    for dataset in [205_000_000u64, 1_000_000_000] {
        let sized = d.sized_config(dataset, None).unwrap();
        assert!(logical(&sized) as f64 >= 2.5 * dataset as f64);
        let mut smaller = sized.clone();
        smaller.geometry.blocks_per_chip -= 1;
        assert!((logical(&smaller) as f64) < 2.5 * dataset as f64);
        assert_eq!(sized.geometry.channels, d.config.geometry.channels);
    }
    // A tiny dataset gets the 128 MiB floor, not a device too small for ext4 and a log.
    assert!(logical(&d.sized_config(4_000_000, None).unwrap()) >= 128 << 20);
    let preset = EmuDevice::parse("emu:ent", &[], EmuSpace::Preset, 0.0).unwrap();
    assert_eq!(preset.sized_config(1 << 40, None).unwrap(), preset.config);
    // Without the wafer binary to serve it, the emulated SSD is refused before anything runs.
    let mut c = Scale::Tiny.config(std::env::temp_dir().join("wafer-peers-never-created-emu"));
    c.devices = vec![PeerDevice::Emu(Box::new(d))];
    assert!(matches!(c.validate(), Err(PeerError::Config(m)) if m.contains("wafer emu serve")));
}

fn row(engine: &str, round: u32, ops_per_sec: f64, write: f64) -> Row {
    Row {
        round,
        engine: engine.into(),
        device: "file".into(),
        phase: "ycsb-a".into(),
        distribution: "zipf".into(),
        ops: 100,
        elapsed_s: 1.0,
        ops_per_sec,
        p50_us: Some(10.0),
        p99_us: None,
        p999_us: None,
        host_write_bytes: (write * 100.0) as u64,
        host_read_bytes: 0,
        host_write_bytes_per_op: write,
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
fn summaries_take_medians_over_rounds_in_measurement_order() {
    let rows = vec![
        row("b", 0, 10.0, 1.0),
        row("a", 0, 30.0, 5.0),
        row("b", 1, 20.0, 3.0),
        row("a", 1, 50.0, 7.0),
        row("b", 2, 90.0, 2.0),
    ];
    let s = summarize(&rows);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].engine.as_str(), s[0].rounds, s[0].ops_per_sec), ("b", 3, 20.0));
    assert_eq!(s[0].host_write_bytes_per_op, 2.0);
    assert_eq!(
        (s[1].engine.as_str(), s[1].ops_per_sec, s[1].host_write_bytes_per_op),
        ("a", 40.0, 6.0)
    );
    assert_eq!(s[1].p99_us, None);
}

#[test]
fn names_parse_and_bad_ones_say_what_is_known() {
    for e in EngineKind::ALL {
        assert_eq!(EngineKind::parse(e.name()), Ok(e));
    }
    assert!(EngineKind::parse("mysql").unwrap_err().contains("rocksdb"));
    assert_eq!(Durability::parse("sync"), Ok(Durability::Sync));
    assert_eq!(Durability::parse("lazy"), Ok(Durability::Lazy));
    assert!(Durability::parse("maybe").is_err());
    assert!(Scale::parse("huge").is_err());
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let dir = std::env::temp_dir().join("wafer-peers-never-created");
    let mut base = Scale::Tiny.config(dir.clone());
    // Engines run in worker processes only: in this one, their host bytes would be every
    // thread's (another test's deleted dirty files cancelled a load's bytes to 0).
    assert!(matches!(base.validate(), Err(PeerError::Config(m)) if m.contains("wafer_exe")));
    assert!(run(&base, &mut wafer_harness::progress::Silent, &mut |_| {}).is_err());
    base.wafer_exe = Some("/nonexistent/wafer".into());
    base.validate().unwrap();
    let mut c = base.clone();
    c.workloads = vec![wafer_workloads::ycsb::Workload::E];
    assert!(matches!(c.validate(), Err(PeerError::Config(_))));
    let mut c = base.clone();
    c.rounds = 0;
    assert!(c.validate().is_err());
    let mut c = base;
    c.engines.clear();
    assert!(run(&c, &mut wafer_harness::progress::Silent, &mut |_| {}).is_err());
    assert!(!dir.exists());
}

#[test]
fn a_missing_library_names_the_package() {
    let e = dl::open_first(&["libwafer-no-such-engine.so.0"], "wafer-no-such-package").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("wafer-no-such-package") && text.contains("libwafer-no-such-engine"),
        "{text}"
    );
}

/// Raw rows: named wafer-raw*, options KEY=VALUE, a bare `blob_threshold` given the run's
/// threshold; the default row is aligned NoWA with LZ4 and packing.
#[test]
fn raw_rows_parse_and_a_bare_blob_threshold_takes_the_runs() {
    let rows = raw::RawRow::defaults();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].name, "wafer-raw-nowa");
    assert_eq!(rows[1].name, "wafer-raw-blobs");
    assert!(rows[1].engine.iter().any(|o| o == "blob_threshold"));
    let blobs = raw::RawRow::parse("wafer-raw-blobs:blob_threshold;open_zones=8").unwrap();
    assert_eq!(blobs.engine, vec!["blob_threshold".to_string(), "open_zones=8".into()]);
    for bad in ["rocksdb", "wafer-raw:open_zones", "wafer raw"] {
        assert!(raw::RawRow::parse(bad).is_err(), "{bad}");
    }
    let c = Scale::Tiny.config(std::env::temp_dir().join("wafer-peers-never-created-raw"));
    assert_eq!(c.raw_rows, rows);
    assert_eq!(c.blob_threshold_bytes, harness::BLOB_THRESHOLD_BYTES_DEFAULT);
    let mut twice = c.clone();
    twice.wafer_exe = Some("/nonexistent/wafer".into());
    twice.raw_rows = vec![rows[0].clone(), rows[0].clone()];
    assert!(twice.validate().is_err());
}

/// Values too long for Wafer's leaves are refused per engine (a named failure, the others
/// run), not for the whole run; a raw row with a blob threshold leaves it to the engine.
#[test]
fn value_sizes_are_checked_per_engine() {
    let max = wafer::options::MAX_INLINE_VALUE_BYTES as u32;
    assert!(EngineKind::WaferBest.value_size_refusal(max, None).is_none());
    let why = EngineKind::WaferRaw.value_size_refusal(4000, None).unwrap();
    assert!(why.contains("4000") && why.contains(&max.to_string()), "{why}");
    for e in [EngineKind::RocksDb, EngineKind::RocksDbBlob, EngineKind::Lmdb] {
        assert!(e.value_size_refusal(4000, None).is_none(), "{e:?}");
    }
    let blobs = raw::RawRow::parse("wafer-raw-blobs:blob_threshold").unwrap();
    assert!(EngineKind::WaferRaw.value_size_refusal(4000, Some(&blobs)).is_none());
    let mut c = Scale::Tiny.config(std::env::temp_dir().join("wafer-peers-never-created-v"));
    c.wafer_exe = Some("/nonexistent/wafer".into());
    c.value_size_bytes = 4000;
    c.validate().unwrap();
    c.value_size_bytes = harness::VALUE_BYTES_MAX + 1;
    assert!(c.validate().is_err());
}

/// Under own:SHARE an engine out of space is tried again 0.1 lower, down to 0.5; other spaces
/// and the file once. Only a full device's errors count as out of space.
#[test]
fn an_engine_out_of_space_is_tried_at_lower_shares() {
    let own = EmuDevice::parse("emu:ent", &[], EmuSpace::Own(0.9), 0.0).unwrap();
    let tries = harness::shares(&PeerDevice::Emu(Box::new(own)));
    let want = [0.9, 0.8, 0.7, 0.6, 0.5];
    assert_eq!(tries.len(), want.len(), "{tries:?}");
    for (t, w) in tries.iter().zip(want) {
        assert!((t.unwrap() - w).abs() < 1e-9, "{tries:?}");
    }
    let preset = EmuDevice::parse("emu:ent", &[], EmuSpace::Preset, 0.0).unwrap();
    assert_eq!(harness::shares(&PeerDevice::Emu(Box::new(preset))), vec![None]);
    assert_eq!(harness::shares(&PeerDevice::File), vec![None]);
    let full = PeerError::Config("wiredtiger: No space left on device".into());
    assert!(harness::out_of_space(&full));
    assert!(!harness::out_of_space(&PeerError::Config("killed".into())));
}

/// RocksDB's statistics text gives its bytes by file kind: SSTs are the flush and compaction
/// jobs' bytes less the blob files' (the jobs' tickers count every file they write).
#[test]
fn rocksdb_statistics_give_bytes_by_file_kind() {
    let text = "rocksdb.block.cache.miss COUNT : 5\n\
                rocksdb.wal.bytes COUNT : 1000\n\
                rocksdb.flush.write.bytes COUNT : 700\n\
                rocksdb.compact.write.bytes COUNT : 500\n\
                rocksdb.blobdb.blob.file.bytes.written COUNT : 400\n";
    let kinds = rocksdb::written_by_kind(text);
    assert_eq!(kinds, vec![("wal", 1000), ("sst", 800), ("blob files", 400)]);
    assert_eq!(rocksdb::written_by_kind(""), vec![("wal", 0), ("sst", 0), ("blob files", 0)]);
}
