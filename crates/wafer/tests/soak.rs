#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! The long-running safety check, at a reduced size in the suite (scripts/soak.sh runs it at
//! full size in release):
//! - SIGKILL cycles on real files in both write modes with every feature on (WAL, doublewrite
//!   in place, background GC out of place, O_DIRECT and io_uring where the filesystem and kernel
//!   allow, batches over three trees, deletes, Sync and group commit, timed checkpoints): the
//!   test binary re-executes itself as the child, which prints `ack <step>` after each
//!   acknowledged operation; after each kill the parent reopens, checks every acknowledged
//!   operation of every cycle and runs `Db::check()`. `WAFER_SOAK_KILLS` cycles per mode.
//! - Out of place, overwrites at 90% fill until the data device has taken
//!   `WAFER_SOAK_CAPACITY_X` times its capacity (bytes the engine issued to it: write-back, GC
//!   copies, map snapshots), on a `WAFER_SOAK_DEVICE_MIB` device (`WAFER_SOAK_ZONE_KIB` zones,
//!   background GC on): free space
//!   and allocated pages stay stable, `Db::check()` is clean every capacity written, after a
//!   crash and after a clean reopen.
//!
//! Power cuts (`FaultDevice`) are tests/crash.rs, sized by `WAFER_CRASH_SEEDS`.
//! Seeds are printed; a failure names the cycle and step.
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use wafer::device::{Counted, FaultDevice, FileOptions, WritePurpose};
use wafer::stats::IoStats;
use wafer::{Db, Durability, Options, WriteBatch};

const TREES: [&str; 3] = ["a", "b", "c"];

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Every feature on: direct I/O through io_uring (each falls back where refused), timed
/// checkpoints besides the log-size ones, run by the checkpoint thread, background write-back,
/// doublewrite in place, background GC out of place.
fn kill_options(out_of_place: bool) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(48 * 4096);
    o.durability = Durability::Sync;
    o.file = FileOptions::DIRECT_URING;
    o.checkpoint_interval = Some(Duration::from_millis(40));
    o.background_checkpoint = true;
    o.background_write_back = true;
    if out_of_place {
        o = o.out_of_place();
        o.out_of_place.background_gc = true;
    }
    o
}

/// The file options this filesystem takes: O_DIRECT is refused on some (tmpfs).
fn usable_options(path: &std::path::Path, out_of_place: bool) -> Options {
    let mut o = kill_options(out_of_place);
    let probe = path.with_extension("probe");
    if wafer::device::FileDevice::open(&probe, 1 << 20, o.file).is_err() {
        o.file = FileOptions::URING;
    }
    let _ = std::fs::remove_file(&probe);
    o
}

/// Prints which file I/O path the cycles use (each falls back where refused).
fn describe_file_io(path: &std::path::Path, out_of_place: bool) {
    let o = usable_options(path, out_of_place);
    let probe = path.with_extension("probe");
    if let Ok(dev) = wafer::device::FileDevice::open(&probe, 1 << 20, o.file) {
        let why = dev.io_uring_unavailable_reason().unwrap_or("");
        eprintln!("file I/O: O_DIRECT {}, io_uring {} {why}", o.file.direct, dev.uses_io_uring());
    }
    let _ = std::fs::remove_file(&probe);
}

/// Operation `step` of cycle `cycle`: what it does to which keys (deterministic, so the parent
/// knows what every acknowledged step did).
#[derive(Debug, Clone)]
enum Op {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
}

fn key(cycle: u64, i: u64) -> Vec<u8> {
    format!("c{cycle:05}-{i:06}").into_bytes()
}

fn value(cycle: u64, i: u64) -> Vec<u8> {
    format!("v{cycle}.{i};").repeat(1 + (i as usize * 7) % 60).into_bytes()
}

/// Step `i` of a cycle: a batch of 1-3 ops over the trees; every 6th step deletes a key put
/// three steps before.
fn step_ops(cycle: u64, i: u64) -> Vec<Op> {
    let tree = TREES[(i % 3) as usize];
    if i % 6 == 5 {
        return vec![Op::Delete(TREES[((i - 3) % 3) as usize], key(cycle, i - 3))];
    }
    let mut ops = vec![Op::Put(tree, key(cycle, i), value(cycle, i))];
    for extra in 1..=(i % 3) {
        let t = TREES[((i + extra) % 3) as usize];
        ops.push(Op::Put(t, key(cycle, 1_000_000 + i * 4 + extra), value(cycle, i + extra)));
    }
    ops
}

fn apply(model: &mut BTreeMap<(&'static str, Vec<u8>), Vec<u8>>, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(t, k, v) => model.insert((t, k.clone()), v.clone()),
            Op::Delete(t, k) => model.remove(&(*t, k.clone())),
        };
    }
}

/// The child: applies steps until killed, acknowledging each once durable. Alternates Sync and
/// group commit (both return only once the batch is durable).
fn child(path: &str, cycle: u64, out_of_place: bool) {
    let db = Db::open(path, usable_options(std::path::Path::new(path), out_of_place)).unwrap();
    // Bounded; the parent kills us long before.
    for i in 0..1_000_000u64 {
        let mut batch = WriteBatch::new();
        for op in step_ops(cycle, i) {
            match op {
                Op::Put(t, k, v) => batch.put(t, &k, &v),
                Op::Delete(t, k) => batch.delete(t, &k),
            };
        }
        let durability = if i % 2 == 0 {
            Durability::Sync
        } else {
            Durability::GroupCommit { max_delay: Duration::from_micros(200) }
        };
        db.write_with(&batch, durability).unwrap();
        // Straight to the pipe: the parent counts what it reads, and a kill loses a buffer.
        let mut out = std::io::stdout().lock();
        writeln!(out, "ack {i}").unwrap();
        out.flush().unwrap();
    }
}

/// The state the database must hold after cycles `acked` (acknowledged steps per cycle): every
/// acknowledged step applied. The step after the last acknowledged one may or may not be.
fn expected(acked: &[u64]) -> BTreeMap<(&'static str, Vec<u8>), Vec<u8>> {
    let mut model = BTreeMap::new();
    for (cycle, &n) in acked.iter().enumerate() {
        for i in 0..n {
            apply(&mut model, &step_ops(cycle as u64, i));
        }
    }
    model
}

fn dump(db: &Db) -> BTreeMap<(&'static str, Vec<u8>), Vec<u8>> {
    let mut m = BTreeMap::new();
    for t in TREES {
        for entry in db.tree(t).unwrap().iter() {
            let (k, v) = entry.unwrap();
            m.insert((t, k), v);
        }
    }
    m
}

type Model = BTreeMap<(&'static str, Vec<u8>), Vec<u8>>;

/// Prints the first keys on which the database and the expected state differ.
fn report_diff(got: &Model, want: &Model) {
    let missing = want.iter().filter(|(k, v)| got.get(*k) != Some(*v));
    let extra = got.keys().filter(|k| !want.contains_key(*k));
    for (k, _) in missing.take(8) {
        eprintln!(
            "expected {}/{}: got {:?}",
            k.0,
            String::from_utf8_lossy(&k.1),
            got.get(k).map(|v| v.len())
        );
    }
    for k in extra.take(8) {
        eprintln!("unexpected {}/{}", k.0, String::from_utf8_lossy(&k.1));
    }
}

#[test]
fn soak_sigkill_cycles_in_place() {
    sigkill_cycles("soak_sigkill_cycles_in_place", false);
}

#[test]
fn soak_sigkill_cycles_out_of_place() {
    sigkill_cycles("soak_sigkill_cycles_out_of_place", true);
}

/// The step an `ack <step>` line acknowledges. Found anywhere in the line: the test harness
/// may print its own text (`test NAME ... `) without a newline before the child's first ack.
fn ack_of(line: &str) -> Option<u64> {
    let at = line.find("ack ")?;
    line[at + 4..].trim().parse().ok()
}

/// Runs one child until its `kill_after`-th ack (or its end), kills it, returns the number of
/// steps acknowledged (acks come in step order, so the last one names them all).
fn run_child(name: &str, path: &std::path::Path, cycle: u64, kill_after: u64) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(&exe)
        .args(["--exact", name, "--nocapture"])
        .env("WAFER_SOAK_CHILD", path)
        .env("WAFER_SOAK_CYCLE", cycle.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut n = 0u64;
    for line in lines.by_ref() {
        if let Some(step) = ack_of(&line.unwrap()) {
            assert_eq!(step, n, "cycle {cycle}: acks out of order");
            n = step + 1;
            if n >= kill_after {
                break;
            }
        }
    }
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    assert_eq!(r, 0, "kill failed");
    // What the child printed before the signal landed was acknowledged too.
    for line in lines {
        let Ok(line) = line else { break };
        if let Some(step) = ack_of(&line) {
            n = step + 1;
        }
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "cycle {cycle}: the child must die by the signal");
    n
}

fn sigkill_cycles(name: &str, out_of_place: bool) {
    if let Ok(path) = std::env::var("WAFER_SOAK_CHILD") {
        let cycle = std::env::var("WAFER_SOAK_CYCLE").unwrap().parse().unwrap();
        child(&path, cycle, out_of_place);
        return;
    }
    let cycles = env_u64("WAFER_SOAK_KILLS", 4);
    let seed = env_u64("WAFER_SOAK_SEED", 0x9E37_79B9 ^ std::process::id() as u64);
    eprintln!("{name}: {cycles} cycles, seed {seed} (rerun with WAFER_SOAK_SEED={seed})");
    let path = std::env::temp_dir().join(format!("wafer-soak-{name}-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
    let mut rng = Rng(seed | 1);
    let mut acked: Vec<u64> = Vec::new();
    let mut in_flight_applied = 0u64;
    describe_file_io(&path, out_of_place);
    for cycle in 0..cycles {
        let n = run_child(name, &path, cycle, 1 + rng.below(60));
        acked.push(n);
        let db = Db::open(&path, usable_options(&path, out_of_place)).unwrap();
        let got = dump(&db);
        let mut want = expected(&acked);
        if got != want {
            // The step after the last acknowledged one may have become durable unacknowledged.
            apply(&mut want, &step_ops(cycle, n));
            if got != want {
                report_diff(&got, &want);
            }
            assert!(got == want, "seed {seed} cycle {cycle}: acknowledged steps {acked:?} lost or a step half applied");
            in_flight_applied += 1;
            // Later cycles expect it too.
            *acked.last_mut().unwrap() += 1;
        }
        let report = db.check().unwrap();
        assert!(report.is_clean(), "seed {seed} cycle {cycle}: {report}");
        drop(db); // A crash too: the next cycle recovers from this one's log.
    }
    let total: u64 = acked.iter().sum();
    eprintln!(
        "{name}: {cycles} SIGKILL cycles, {total} acknowledged steps all present, \
         {in_flight_applied} unacknowledged in-flight steps found applied, Db::check clean"
    );
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
}

/// Out of place at 90% fill: overwrites until the device took `WAFER_SOAK_CAPACITY_X` times its
/// capacity (default 3, on a 4 MiB device).
#[test]
fn soak_out_of_place_overwrites_at_90_percent_fill() {
    let device_bytes = env_u64("WAFER_SOAK_DEVICE_MIB", 4) << 20;
    let multiple = env_u64("WAFER_SOAK_CAPACITY_X", 3);
    let seed = env_u64("WAFER_SOAK_SEED", 0x5EED);
    eprintln!("soak: {multiple}x a {device_bytes}-byte device, seed {seed}");
    let stats = Arc::new(IoStats::default());
    let data = Arc::new(FaultDevice::new(device_bytes));
    let log = Arc::new(FaultDevice::new(4 << 20));
    let dev = Arc::new(Counted::new(data.clone(), stats.clone()));
    let wal = log.clone();
    let mut options = Options::test_min().out_of_place().with_buffer_pool_bytes(64 * 4096);
    options.out_of_place.background_gc = true;
    // The page-id cap above the 90% the soak fills to (test_min caps at 90%).
    options.out_of_place.max_fill_percent = 95;
    // Larger devices take larger zones (GC thresholds count zones).
    options.out_of_place.zone_bytes = env_u64("WAFER_SOAK_ZONE_KIB", 16) << 10;
    let db = Db::open_on_devices(dev.clone(), wal.clone(), options.clone()).unwrap();
    let (t, n) = load_to_fill(&db, 0.9);
    let loaded = db.stats();
    let o = loaded.out_of_place.unwrap();
    eprintln!(
        "loaded {n} keys: {} pages of {} zone slots",
        loaded.allocated_pages,
        u64::from(o.zone_count) * u64::from(o.slots_per_zone)
    );
    let start = stats.snapshot();
    let mut rng = Rng(seed | 1);
    let mut updates = 0u64;
    let mut zones_empty_min = u32::MAX;
    for round in 1..=multiple {
        // Bounded: each pass writes at least a page per 40 updates.
        for _ in 0..device_bytes {
            let written = stats.snapshot().since(&start).db_issued_bytes();
            if written >= round * device_bytes {
                break;
            }
            for _ in 0..200 {
                let i = rng.below(n);
                t.put(&soak_key(i), &soak_value(i, updates)).unwrap();
                updates += 1;
            }
        }
        let s = db.stats();
        let o = s.out_of_place.unwrap();
        zones_empty_min = zones_empty_min.min(o.zones_empty);
        let report = db.check().unwrap();
        assert!(report.is_clean(), "seed {seed} round {round}: {report}");
        // Same keys, same value sizes: the tree neither grows nor leaks (splits and merges
        // move a few pages).
        let drift = s.allocated_pages.abs_diff(loaded.allocated_pages);
        assert!(
            drift * 50 <= loaded.allocated_pages,
            "seed {seed} round {round}: {} pages, {} after the load",
            s.allocated_pages,
            loaded.allocated_pages
        );
        let io = stats.snapshot().since(&start);
        eprintln!(
            "{round}x: {updates} updates, {} pages, {} empty zones, {} mapped, GC cycles {}, \
             user {} MiB, GC copies {} MiB, check clean",
            s.allocated_pages,
            o.zones_empty,
            o.mapped_pages,
            o.gc_cycles,
            (io.bytes(WritePurpose::UserEviction) + io.bytes(WritePurpose::UserCheckpoint)) >> 20,
            io.bytes(WritePurpose::GcCopy) >> 20
        );
    }
    let gc_bytes = stats.snapshot().since(&start).bytes(WritePurpose::GcCopy);
    assert!(gc_bytes > 0, "at 90% fill GC must copy");
    // A power cut while the database and its GC thread run: the images keep what was synced
    // and a random part of the rest. (Dropping the Db is no crash here: a GC cycle in flight
    // may still write after the drop returns when its thread held the last pool reference.)
    let (dev, wal) = (Arc::new(data.power_cut(seed)), Arc::new(log.power_cut(seed)));
    drop(db);
    let db = Db::open_on_devices(dev.clone(), wal.clone(), options.clone()).unwrap();
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed} after a crash: {report}");
    for i in (0..n).step_by(97) {
        assert!(db.tree("t").unwrap().get(&soak_key(i)).unwrap().is_some(), "key {i} lost");
    }
    db.close().unwrap();
    let db = Db::open_on_devices(dev, wal, options).unwrap();
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed} after a clean reopen: {report}");
    eprintln!("soak: {multiple}x capacity, {updates} updates, {gc_bytes} GC bytes, min empty zones {zones_empty_min}: {report}");
}

fn soak_key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(0x9E37_79B9) % 1_000_000_007).into_bytes()
}

fn soak_value(i: u64, version: u64) -> Vec<u8> {
    let mut v = format!("{i}:{version}:").into_bytes();
    v.resize(120, b'.');
    v
}

/// Inserts keys until allocated pages reach `fill` of the zone slots.
fn load_to_fill(db: &Db, fill: f64) -> (wafer::Tree, u64) {
    let t = db.tree("t").unwrap();
    let o = db.stats().out_of_place.unwrap();
    let slots = u64::from(o.zone_count) * u64::from(o.slots_per_zone);
    let target = (slots as f64 * fill) as u64;
    let mut n = 0u64;
    // Bounded: every 100 inserts add at least a page.
    while db.stats().allocated_pages < target && n < slots * 100 {
        for _ in 0..100 {
            t.put(&soak_key(n), &soak_value(n, 0)).unwrap();
            n += 1;
        }
    }
    db.checkpoint().unwrap();
    (t, n)
}
