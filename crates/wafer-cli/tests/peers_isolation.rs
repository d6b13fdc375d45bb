//! `bench peers` with each engine in a worker process and each emulated SSD served by a child
//! `wafer emu serve` (this crate's binary): the emulated SSD end to end, and an engine that
//! aborts or hangs mid-run on the mount is an error in its rows, the run goes on, and nothing
//! stays mounted. Skips where FUSE or loop devices are missing, unless WAFER_REQUIRE_FUSE is
//! set (CI).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use wafer_bench::peers::emu_device::EmuSpace;
use wafer_bench::peers::worker::WorkerFault;
use wafer_bench::peers::{
    harness, EmuDevice, EngineKind, PeerDevice, PeersConfig, Scale, WriteVolume,
};
use wafer_bench::progress::Silent;
use wafer_bench::runner::spec::Stop;

fn unavailable() -> Option<String> {
    let missing =
        flashemu_fuse::serve::fuse_unavailable().or_else(flashemu_fuse::loopfs::loop_unavailable);
    if let Some(reason) = &missing {
        assert!(std::env::var_os("WAFER_REQUIRE_FUSE").is_none(), "{reason}");
        eprintln!("skipped: {reason}");
    }
    missing
}

fn config(name: &str, engines: Vec<EngineKind>, space: EmuSpace, fill: f64) -> PeersConfig {
    let dir = std::env::temp_dir().join(format!("wafer-peers-iso-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut c = Scale::Tiny.config(dir);
    c.engines = engines;
    let device = EmuDevice::parse("emu:ent", &[], space, fill).unwrap();
    c.devices = vec![PeerDevice::Emu(Box::new(device))];
    c.record_count = 1500;
    c.stop = Stop::Ops(400);
    c.wafer_exe = Some(PathBuf::from(env!("CARGO_BIN_EXE_wafer")));
    c
}

/// Mount points under `dir` still listed by the kernel (the run must leave none).
fn mounts_under(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let prefix = dir.display().to_string();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|m| m.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// Wafer on the emulated SSD: the rows carry the device's and the flash's bytes, the settings
/// the filesystem's use and the server's final counters.
#[test]
fn smoke_on_the_emulated_ssd() {
    if unavailable().is_some() {
        return;
    }
    // The default sizing: a load on the host measures the engine's files first.
    let mut c = config("smoke", vec![EngineKind::WaferOutOfPlace], EmuSpace::DEFAULT, 0.0);
    // The write phases (A, F) end at a volume of writes: 2% of the device, or 20 s.
    let volume = WriteVolume { capacities: 0.02, limit: Duration::from_secs(20) };
    c.emu_write_phases = Some(volume);
    let report = harness::run(&c, &mut Silent, &mut |_| {}).unwrap();
    assert!(mounts_under(&c.dir).is_empty(), "{:?}", mounts_under(&c.dir));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.rows.len(), 1 + c.workloads.len() * c.distributions.len());
    let settings = &report.engines["wafer-out-of-place on emu:ent"];
    let footprint = settings["emu_sizing_footprint_bytes"].as_u64().unwrap();
    assert!(footprint > 0, "{settings}");
    // Sized by its own peak: no filler; what the engine's files took fits the filesystem.
    assert_eq!(settings["emu_filler_bytes"].as_u64(), Some(0), "{settings}");
    let fs_bytes = settings["emu_fs_bytes"].as_u64().unwrap();
    let loaded = settings["emu_used_after_load_bytes"].as_u64().unwrap();
    let at_end = settings["emu_used_at_end_bytes"].as_u64().unwrap();
    assert!(loaded > 0 && at_end <= fs_bytes, "{settings}");
    let capacity = settings["emu_capacity_bytes"].as_u64().unwrap();
    let peak = settings["dir_used_peak_bytes"].as_u64().unwrap();
    assert!(peak >= settings["dir_used_after_load_bytes"].as_u64().unwrap(), "{settings}");
    // The volume is counted in the device's own host writes (the phase's end flushes the
    // page cache into its row, so a row has at least the volume).
    for r in report.rows.iter().filter(|r| r.phase == "ycsb-a" || r.phase == "ycsb-f") {
        let device_bytes = r.device_write_bytes_per_op.unwrap() * r.ops as f64;
        let reached = device_bytes >= volume.capacities * capacity as f64;
        assert!(reached || r.elapsed_s >= 20.0, "{r:?} of a {capacity}-byte device");
    }
    let totals = &settings["emu_device_totals"];
    let flash = totals["flash_bytes"].as_u64().unwrap();
    let per_row: f64 =
        report.rows.iter().filter_map(|r| r.flash_bytes_per_op.map(|f| f * r.ops as f64)).sum();
    // The server's final count covers every phase (and mkfs, the fill, the syncs between).
    assert!(flash as f64 >= per_row * 0.99, "{flash} < {per_row}");
    for r in &report.rows {
        assert_eq!(r.device, "emu:ent");
        let writes = r.phase != "ycsb-c";
        // A phase that writes records reaches the flash; the read-only one has no total WAF.
        assert_eq!(r.total_waf.is_some(), writes, "{r:?}");
        if writes {
            assert!(r.flash_bytes_per_op.unwrap() > 0.0 && r.total_waf.unwrap() > 0.0, "{r:?}");
            assert!(r.device_write_bytes_per_op.unwrap() > 0.0, "{r:?}");
            // Total WAF is the engine-and-filesystem part times the SSD's.
            let product = r.db_waf.unwrap() * r.ssd_waf.unwrap();
            assert!((product / r.total_waf.unwrap() - 1.0).abs() < 1e-9, "{r:?}");
        }
    }
    assert!(wafer_bench::peers::table::markdown(&report).contains("total WAF"));
}

/// Wafer on the raw served device: its rows' device bytes are the data and WAL devices'
/// together, with no filesystem part; aligned NoWA keeps the SSD's own GC from copying; the
/// settings carry both devices' final counters and the engine options it ran with.
#[test]
fn a_raw_row_runs_on_the_served_device_without_a_filesystem() {
    if unavailable().is_some() {
        return;
    }
    let mut c = config("raw", vec![EngineKind::WaferRaw], EmuSpace::DEFAULT, 0.0);
    c.emu_write_phases = Some(WriteVolume { capacities: 0.05, limit: Duration::from_secs(20) });
    let report = harness::run(&c, &mut Silent, &mut |_| {}).unwrap();
    assert!(mounts_under(&c.dir).is_empty(), "{:?}", mounts_under(&c.dir));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // Both default rows: aligned NoWA, and the same with values out of line.
    assert_eq!(report.rows.len(), 2 * (1 + c.workloads.len() * c.distributions.len()));
    for name in ["wafer-raw-nowa", "wafer-raw-blobs"] {
        let settings = &report.engines[&format!("{name} on emu:ent")];
        let totals = &settings["emu_wal_device_totals"];
        assert!(totals["flash_bytes"].as_u64().unwrap() > 0, "{settings}");
        let options = settings["raw_engine_options"].to_string();
        assert!(options.contains("nowa=true") && options.contains("gc_unit_bytes="), "{options}");
        // The unit is the one the served device reports, as a user's tool would read it.
        let source = settings["raw_gc_unit_source"].as_str().unwrap();
        assert!(source.contains("served device's report"), "{source}");
        let reported = settings["emu_device_totals"]["gc_unit_bytes"].as_u64().unwrap();
        assert!(options.contains(&format!("gc_unit_bytes={reported}")), "{options}");
    }
    let mut blob_bytes = 0.0;
    // Flash and device bytes summed over the writing phases, per row: the SSD's own GC is
    // judged over the run, since a phase of a few hundred operations can end with bytes in the
    // device's write buffer and the next one then programs them.
    let mut flash_device = std::collections::BTreeMap::<&str, (f64, f64)>::new();
    for r in report.rows.iter().filter(|r| r.phase != "ycsb-c") {
        let e = flash_device.entry(r.engine.as_str()).or_default();
        e.0 += r.flash_bytes_per_op.unwrap() * r.ops as f64;
        e.1 += r.device_write_bytes_per_op.unwrap() * r.ops as f64;
        assert!(r.engine.starts_with("wafer-raw-"), "{r:?}");
        let b = r.flash_breakdown.as_ref().unwrap();
        if r.engine == "wafer-raw-blobs" {
            blob_bytes += b["blobs"];
            // Lazy commits: a phase of a few hundred operations may leave its blobs staged
            // and its log buffered until the next second's sync (none came within it).
            if r.flash_bytes_per_op == Some(0.0) {
                continue;
            }
        }
        assert!(b["wal"] > 0.0 && !b.contains_key("filesystem"), "{r:?}");
        // The parts are the device's received bytes plus what its GC copied; a phase of a
        // few hundred operations may end with some of them still in the device's write
        // buffer, not yet on flash, so the sum is the larger of the two.
        let sum: f64 = b.values().sum();
        let whole = r.flash_bytes_per_op.unwrap().max(r.device_write_bytes_per_op.unwrap());
        assert!((sum / whole - 1.0).abs() < 0.05, "{r:?}");
    }
    for (engine, (flash, device)) in flash_device {
        assert!(flash <= device * 1.05, "{engine}: flash {flash} B for {device} device B");
    }
    assert!(blob_bytes > 0.0, "the blob row wrote no blob pages");
}

/// WiredTiger's and PostgreSQL's rows split their bytes by file kind from their own statistics:
/// the log and the tables (heap) each wrote something over the run.
#[test]
fn wiredtiger_and_postgres_split_their_bytes_by_file_kind() {
    if unavailable().is_some() {
        return;
    }
    let engines = vec![EngineKind::WiredTiger, EngineKind::Postgres];
    let mut c = config("kinds", engines, EmuSpace::DEFAULT, 0.0);
    c.emu_write_phases = Some(WriteVolume { capacities: 0.02, limit: Duration::from_secs(20) });
    let report = harness::run(&c, &mut Silent, &mut |_| {}).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    for (engine, data) in [("wiredtiger", "tables"), ("postgres", "heap")] {
        let (mut wal, mut pages) = (0.0, 0.0);
        for r in report.rows.iter().filter(|r| r.engine == engine && r.phase != "ycsb-c") {
            let b = r.flash_breakdown.as_ref().unwrap();
            assert!(!b.contains_key("engine + filesystem"), "{r:?}");
            wal += b["wal"] * r.ops as f64;
            pages += b[data] * r.ops as f64;
        }
        assert!(wal > 0.0 && pages > 0.0, "{engine}: wal {wal} B, {data} {pages} B");
    }
}

/// Every engine's process aborts (SIGABRT, as Debian's librocksdb did near a full device)
/// after its second row, with its files open on the emulated SSD: each is a failure with the
/// signal and its log, the rows before it are kept, the next engine still runs, and every
/// mount is gone afterwards.
#[test]
fn an_engine_that_aborts_on_the_mount_is_a_failure_not_a_hang() {
    if unavailable().is_some() {
        return;
    }
    let mut c = config(
        "abort",
        vec![EngineKind::WaferInPlace, EngineKind::WaferOutOfPlace],
        EmuSpace::PerDataset(2.5),
        0.0,
    );
    c.fault = Some(WorkerFault::AbortAfterRows(2));
    let report = harness::run(&c, &mut Silent, &mut |_| {}).unwrap();
    assert!(mounts_under(&c.dir).is_empty(), "{:?}", mounts_under(&c.dir));
    assert_eq!(report.failures.len(), 2, "{:?}", report.failures);
    for f in &report.failures {
        assert!(f.contains("SIGABRT") && f.contains("aborting after 2 rows"), "{f}");
        assert!(f.contains("after ycsb-a zipf"), "{f}");
    }
    for engine in ["wafer-in-place", "wafer-out-of-place"] {
        assert_eq!(report.rows.iter().filter(|r| r.engine == engine).count(), 2);
    }
    let table = wafer_bench::peers::table::markdown(&report);
    assert!(table.contains("Failed") && table.matches("SIGABRT").count() == 2, "{table}");
}

/// An engine that stops making progress (after its first row) is killed once a phase has not
/// ended within the timeout, and reported; its device is torn down.
#[test]
fn an_engine_that_hangs_is_killed_at_its_timeout() {
    if unavailable().is_some() {
        return;
    }
    let mut c = config("hang", vec![EngineKind::WaferOutOfPlace], EmuSpace::PerDataset(2.5), 0.0);
    c.fault = Some(WorkerFault::HangAfterRows(1));
    // Long enough for the open and load to end on a loaded machine (3 s was not, twice: at
    // load averages of 12 and 9 the worker was killed before its first row); the hang is
    // endless.
    c.phase_timeout = Duration::from_secs(20);
    let report = harness::run(&c, &mut Silent, &mut |_| {}).unwrap();
    assert!(mounts_under(&c.dir).is_empty(), "{:?}", mounts_under(&c.dir));
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let f = &report.failures[0];
    assert!(f.contains("no phase ended within 20 s") && f.contains("hanging after 1 rows"), "{f}");
    assert_eq!(report.rows.len(), 1);
}
