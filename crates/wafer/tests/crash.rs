#![allow(clippy::unwrap_used)]
//! Crash tests through the fault-injecting device: a random workload of batches (Sync and None
//! durability, several trees, a tiny pool so eviction, doublewrite and checkpoints happen) on a
//! data device and a WAL device; power is cut on both at one random I/O counted across both
//! (unsynced writes dropped, kept or torn at 512 B sectors); then recovery, itself cut once at a
//! random I/O, and recovered again. The result must equal the model after some batch j with
//! j >= the last batch acknowledged under Sync: acknowledged batches are never lost, and every
//! batch is there whole or not at all.
//!
//! `WAFER_CRASH_SEEDS=N` runs N seeds (default 100); a failure prints its seed, and
//! `WAFER_CRASH_SEED=s` reruns one.
use flashemu::rng::SplitMix64;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wafer::device::{
    CwChunk, CwDone, Device, DeviceCapabilities, DeviceError, FaultDevice, ReadOp, WriteOp,
    WritePurpose, ZoneInfo, Zoned, ZonedFaultDevice, ZonedFaultGeometry, ZonedVolume,
};
use wafer::{Db, Durability, Options, WriteBatch};

const TREES: [&str; 3] = ["a", "b", "c"];
const BATCHES: u64 = 80;

/// SplitMix64 with `below` by modulo (the sequences every seed here was run with).
struct Rng(SplitMix64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The devices of one database: data and WAL, and with ZNS the zoned device behind the data
/// device (which then holds only the metadata: a `ZonedVolume`).
#[derive(Debug, Clone)]
struct Devices {
    data: Arc<FaultDevice>,
    wal: Arc<FaultDevice>,
    zones: Option<Arc<ZonedFaultDevice>>,
}

impl Devices {
    fn fresh() -> Devices {
        let zones = ZNS.get().then(|| {
            let zones = ZonedFaultDevice::new(ZonedFaultGeometry {
                zone_bytes: 6 * 4096,
                zone_capacity_bytes: 4 * 4096,
                // Compressed pages take a fraction of a slot: fewer zones keep GC busy.
                zone_count: if CCZNS.get() { 16 } else { 40 },
                max_open_zones: 8,
            });
            Arc::new(if CCZNS.get() { zones.with_compression(32) } else { zones })
        });
        let data = match GROWTH.get() {
            true => FaultDevice::new(GROWTH_START_BYTES).with_growth(growth_max_bytes()),
            false => FaultDevice::new(data_bytes()),
        };
        let wal = Arc::new(FaultDevice::new(options().wal_capacity_bytes));
        Devices { data: Arc::new(data), wal, zones }
    }

    /// All of them after one power cut.
    fn power_cut(&self, seed: u64) -> Devices {
        Devices {
            data: Arc::new(self.data.power_cut(seed)),
            wal: Arc::new(self.wal.power_cut(seed)),
            zones: self.zones.as_ref().map(|z| Arc::new(z.power_cut(seed))),
        }
    }

    /// Loses power on every device now (the I/O being issued is in flight).
    fn cut_now(&self) {
        self.data.crash_at_io(self.data.io_count());
        self.wal.crash_at_io(self.wal.io_count());
        if let Some(z) = &self.zones {
            z.crash_at_io(z.io_count());
        }
    }
}

/// One I/O clock across the devices: at I/O number `target` (counting all), every device loses
/// power at once.
#[derive(Debug)]
struct Trip {
    count: AtomicU64,
    target: u64,
    devices: Devices,
}

impl Trip {
    fn new(target: u64, devices: &Devices) -> Arc<Trip> {
        Arc::new(Trip { count: AtomicU64::new(0), target, devices: devices.clone() })
    }
    fn tick(&self) {
        if self.count.fetch_add(1, Ordering::SeqCst) == self.target {
            self.devices.cut_now();
        }
    }
}

#[derive(Debug)]
struct TripDevice<D> {
    inner: Arc<D>,
    trip: Arc<Trip>,
}

impl<D: Device> Device for TripDevice<D> {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.trip.tick();
        self.inner.read_batch(ops)
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        self.trip.tick();
        self.inner.write_batch(ops)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.trip.tick();
        self.inner.sync()
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.trip.tick();
        self.inner.trim(offset, len)
    }
    fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        self.trip.tick();
        self.inner.grow_to(capacity_bytes)
    }
    fn zoned(&self) -> Option<&dyn Zoned> {
        self.inner.zoned().map(|_| self as &dyn Zoned)
    }
    fn capabilities(&self) -> DeviceCapabilities {
        self.inner.capabilities()
    }
}

/// Zone commands tick the clock too (only a zoned `D` is asked for them).
impl<D: Device> Zoned for TripDevice<D> {
    fn zone_bytes(&self) -> u64 {
        self.zoned_inner().zone_bytes()
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.zoned_inner().zone_capacity_bytes()
    }
    fn zone_count(&self) -> u32 {
        self.zoned_inner().zone_count()
    }
    fn zone_append(&self, zone: u32, data: &[u8], p: WritePurpose) -> Result<u64, DeviceError> {
        self.trip.tick();
        self.zoned_inner().zone_append(zone, data, p)
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        self.trip.tick();
        self.zoned_inner().zone_reset(zone)
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        self.trip.tick();
        self.zoned_inner().zone_finish(zone)
    }
    fn report_zones(&self) -> Result<Vec<ZoneInfo>, DeviceError> {
        self.trip.tick();
        self.zoned_inner().report_zones()
    }
    fn compressed_write(&self, offset: u64, chunks: &[CwChunk<'_>]) -> Result<CwDone, DeviceError> {
        self.trip.tick();
        self.zoned_inner().compressed_write(offset, chunks)
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        self.trip.tick();
        self.zoned_inner().decompressed_read(offset, feedback, buf)
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.trip.tick();
        self.zoned_inner().zone_open_padding(zone)
    }
}

impl<D: Device> TripDevice<D> {
    fn zoned_inner(&self) -> &dyn Zoned {
        self.inner.zoned().unwrap()
    }
}

thread_local! {
    /// The write mode of this test's thread (each test runs on a thread of its own).
    static OUT_OF_PLACE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Out of place with LZ4 pages packed several to a slot.
    static COMPRESSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// With COMPRESSED: packing off, pages concatenated across slot boundaries.
    static CONCATENATED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Grouping by deathtime: GDT placement over six open zones, several victims a cycle.
    static GDT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// NoWA: zones open in groups, GC compensates imbalance (a GC unit of 4 zones, so the
    /// small device is over NoWA's budget and compensations run).
    static NOWA: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// A ZNS SSD (zones of 4 writable slots in a 6-slot stride) behind the data device, which
    /// then holds the superblock and snapshots only.
    static ZNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// With ZNS: the zoned device compresses (CCZNS) and the store hands it the pages
    /// (`compression = device`).
    static CCZNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Values of 400 bytes and more out of line (blobs), some of several pages: cuts while
    /// blob pages are staged, written, moved by GC and dropped.
    static BLOBS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// With BLOBS: every value out of line and a small log, so batches fold the free-extent
    /// tree (a fold comes once a checkpoint record's worth of extent changes piled up).
    static ALL_BLOBS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The data device starts at 16 pages and grows (as a file does) up to 8 MiB: cuts land
    /// among growths, and recovery finds pages past the size the database was created with.
    static GROWTH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// GC through the buffer pool (`gc_in_pool`, with the artifact's other choices): victims'
    /// survivors handed to the pool as dirty pages and written out by evictions, victims reset
    /// once drained; cuts while victims drain and while a drain falls back to a direct copy.
    static GC_IN_POOL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The data device's size when GROWTH starts it small, and the most it may grow to (out of
/// place less, so zones still turn over and cuts land inside GC).
const GROWTH_START_BYTES: u64 = 128 << 10;
fn growth_max_bytes() -> u64 {
    if OUT_OF_PLACE.get() {
        2 << 20
    } else {
        8 << 20
    }
}

/// Out of place the data device is small, so zones turn over and cuts land inside GC.
fn data_bytes() -> u64 {
    if ZNS.get() {
        256 << 10
    } else if OUT_OF_PLACE.get() && GC_IN_POOL.get() {
        // Fuller zones, so victims still hold pages for the pool to take.
        448 << 10
    } else if OUT_OF_PLACE.get() {
        640 << 10
    } else {
        8 << 20
    }
}

fn options() -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(12 * 4096);
    // Power cuts land inside background write-backs and checkpoints too.
    o.background_write_back = true;
    o.background_checkpoint = true;
    if OUT_OF_PLACE.get() {
        o = o.out_of_place();
    }
    if COMPRESSED.get() {
        o.out_of_place.compression = wafer::options::Compression::Lz4;
        o.out_of_place.packing = !CONCATENATED.get();
    }
    if GDT.get() {
        o.out_of_place.placement = wafer::options::PlacementKind::Gdt;
        o.out_of_place.policy = wafer::options::VictimPolicyKind::CostBenefitUntilZone;
        o.out_of_place.open_zones = 6;
    }
    if ZNS.get() {
        // DB zones are the device's zones.
        o.out_of_place.zone_bytes = 0;
    }
    if CCZNS.get() {
        o.out_of_place.compression = wafer::options::Compression::Device;
        // Thin provisioning: the pages compress several to a slot (as with host compression).
        o.out_of_place.max_fill_percent = 250;
        if ALL_BLOBS.get() {
            o.blob_threshold_bytes = Some(0);
        }
    }
    if NOWA.get() {
        o.out_of_place.nowa = true;
        o.out_of_place.gc_unit_bytes = 4 * o.out_of_place.zone_bytes;
    }
    if CONCATENATED.get() {
        // Write-back batches of more than a slot of compressed pages (a sweep takes at most
        // a quarter of the pool), so pages cross slot ends.
        o = o.with_buffer_pool_bytes(64 * 4096);
        o.eviction_batch_pages = 16;
        o.out_of_place.gc_batch_pages = 16;
    }
    if BLOBS.get() {
        o.blob_threshold_bytes = Some(400);
        // A blob takes a page id of its own where its value shared a leaf inline: page ids,
        // not slots, would fill first (compressed blob pages pack several to a slot).
        o.out_of_place.max_fill_percent = 250;
    }
    if GC_IN_POOL.get() {
        // With the artifact's other choices: its bursts take up to 16 victims, past the wholly
        // dead zones this workload leaves, so survivors do go to the pool.
        o.out_of_place.artifact = wafer::options::ArtifactOptions::all();
    }
    if GROWTH.get() {
        // Out of place the layout is made for this size when the database is created.
        o.max_file_bytes = Some(growth_max_bytes());
    }
    o.wal_capacity_bytes = 1 << 20;
    o.checkpoint_log_bytes = 96 << 10;
    if ALL_BLOBS.get() {
        // A checkpoint record carries a 32nd of the log between checkpoints of extent
        // changes: a small one, so that the workload's few hundred changes fold.
        o.wal_capacity_bytes = 512 << 10;
        o.checkpoint_log_bytes = 24 << 10;
    }
    o
}

fn open(devices: &Devices, trip: &Arc<Trip>) -> wafer::Result<Db> {
    let d: Arc<dyn Device> =
        Arc::new(TripDevice { inner: devices.data.clone(), trip: trip.clone() });
    let w = Arc::new(TripDevice { inner: devices.wal.clone(), trip: trip.clone() });
    let data: Arc<dyn Device> = match &devices.zones {
        Some(z) => {
            let zones = Arc::new(TripDevice { inner: z.clone(), trip: trip.clone() });
            Arc::new(ZonedVolume::new(d, zones)?)
        }
        None => d,
    };
    Ok(Db::open_on_devices(data, w, options())?)
}

type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn random_batch(rng: &mut Rng, model: &mut Model) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for _ in 0..1 + rng.below(10) {
        let tree = TREES[rng.below(3) as usize];
        let key = format!("k{:04}", rng.below(400)).into_bytes();
        if rng.below(10) < 7 {
            let mut len =
                if rng.below(10) == 0 { 600 + rng.below(900) } else { 16 + rng.below(200) };
            if BLOBS.get() && rng.below(25) == 0 {
                // Blobs of two to three pages.
                len = 4500 + rng.below(7000);
            }
            let fill = rng.next() as u8;
            let value: Vec<u8> = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
            batch.put(tree, &key, &value);
            model.insert((tree.to_string(), key), value);
        } else {
            batch.delete(tree, &key);
            model.remove(&(tree.to_string(), key));
        }
    }
    batch
}

/// Copies a snapshot into a new database (off the failing devices), which must then equal
/// `model` and check clean.
fn backup(db: &Db, model: &Model) -> wafer::Result<()> {
    let snap = db.snapshot()?;
    let mut o = Options::test_min();
    o.blob_threshold_bytes = options().blob_threshold_bytes;
    let data = Arc::new(wafer::device::MemoryDevice::new(16 << 20));
    let wal = Arc::new(wafer::device::MemoryDevice::new(4 << 20));
    let copy = Db::open_on_devices(data, wal, o)?;
    snap.copy_to(&copy)?;
    assert!(dump(&copy) == *model, "a backup differs from the state it began at");
    let report = copy.check()?;
    assert!(report.is_clean(), "backup: {report}");
    Ok(())
}

/// A range delete (mostly), a clear or a drop of one tree, applied to `model` as well.
fn random_cut(rng: &mut Rng, db: &Db, model: &mut Model) -> wafer::Result<()> {
    let tree = TREES[rng.below(3) as usize];
    match rng.below(8) {
        0 => {
            model.retain(|(t, _), _| t != tree);
            Ok(db.drop_tree(tree).map(|_| ())?)
        }
        1 => {
            model.retain(|(t, _), _| t != tree);
            Ok(db.tree(tree)?.clear()?)
        }
        _ => {
            let lo = rng.below(400);
            let hi = lo + 1 + rng.below(200);
            let (lo, hi) = (format!("k{lo:04}").into_bytes(), format!("k{hi:04}").into_bytes());
            model.retain(|(t, k), _| t != tree || *k < lo || *k >= hi);
            Ok(db.tree(tree)?.delete_range(lo..hi)?)
        }
    }
}

/// Runs the workload until it is done or an error (the power cut) stops it. Returns the model
/// after each batch (index 0: before any) and the index of the last one acknowledged by Sync.
fn workload(seed: u64, db: &Db) -> (Vec<Model>, usize) {
    let mut rng = Rng::new(seed ^ 0xC0FFEE);
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    let mut acked = 0;
    for _ in 0..BATCHES {
        let batch = random_batch(&mut rng, &mut model);
        let sync = rng.below(2) == 0;
        let durability = if sync { Durability::Sync } else { Durability::None };
        states.push(model.clone());
        match db.write_with(&batch, durability) {
            Ok(()) if sync => acked = states.len() - 1,
            Ok(()) => {}
            Err(e) => {
                if std::env::var("WAFER_CRASH_SEED").is_ok() {
                    eprintln!("workload stops: {e}");
                }
                break;
            }
        }
        if rng.below(25) == 0 && db.checkpoint().is_err() {
            break;
        }
        // A backup in progress: the cut may land while it reads; one that completes holds
        // exactly the state it began at, and checks clean.
        if rng.below(20) == 0 && backup(db, &model).is_err() {
            break;
        }
        // Range deletes, clears and drops: cuts land between a cut's batch and the batches
        // that free what it detached, and inside both.
        if rng.below(8) == 0 {
            let cut = random_cut(&mut rng, db, &mut model);
            states.push(model.clone());
            if cut.is_err() {
                break;
            }
        }
        // Compressed pages fill the device too slowly for GC to start on its own: collect
        // every zone now and then, so cuts land inside GC moves of packed slots too.
        if COMPRESSED.get() && rng.below(8) == 0 && db.collect_garbage(true).is_err() {
            break;
        }
    }
    (states, acked)
}

fn dump(db: &Db) -> Model {
    let mut m = Model::new();
    for name in db.tree_names().unwrap() {
        for entry in db.tree(&name).unwrap().iter() {
            let (k, v) = entry.unwrap();
            m.insert((name.clone(), k), v);
        }
    }
    m
}

#[derive(Debug, Default)]
struct Totals {
    seeds: u64,
    /// Cuts recovered from: one in each workload, plus the recoveries that were cut.
    power_cuts: u64,
    /// Out of place: GC cycles of the dry runs.
    gc_cycles: u64,
    /// Out of place with GC_IN_POOL: survivors the dry runs' GC handed to the pool.
    gc_pool_survivors: u64,
    torn_repaired: u64,
    recovery_crashes: u64,
    redo_applied: u64,
    discarded: u64,
    checkpoints_seen: u64,
    evictions: u64,
    pages: u64,
    /// Dry runs whose data device grew while the workload ran.
    grown: u64,
    /// Blobs written and freed, and folds of the blob free-extent tree, in the dry runs.
    blob_changes: u64,
    folds: u64,
}

fn run_seed(seed: u64, totals: &mut Totals) {
    let mut rng = Rng::new(seed);
    // Dry run: how many I/Os the whole workload issues, so the cut lands anywhere in it.
    let devs = Devices::fresh();
    let trip = Trip::new(u64::MAX, &devs);
    let db = open(&devs, &trip).unwrap();
    // Out of place a device smaller than its layout's fewest zones grows at creation already.
    let created_bytes = devs.data.capacity_bytes();
    let _ = workload(seed, &db);
    totals.checkpoints_seen += db.stats().checkpoints;
    totals.evictions += db.stats().pool.evictions;
    totals.gc_cycles += db.stats().out_of_place.map_or(0, |o| o.gc_cycles);
    totals.folds += db.stats().blobs.map_or(0, |b| b.folds);
    totals.blob_changes += db.stats().blobs.map_or(0, |b| b.blobs_written + b.blobs_freed);
    totals.gc_pool_survivors += db.stats().out_of_place.map_or(0, |o| o.gc_pool_survivors);
    totals.pages += db.stats().allocated_pages;
    totals.grown += u64::from(devs.data.capacity_bytes() > created_bytes);
    let total_io = trip.count.load(Ordering::SeqCst);
    drop(db);

    let devs = Devices::fresh();
    let trip = Trip::new(rng.below(total_io), &devs);
    let (states, acked) = match open(&devs, &trip) {
        Ok(db) => workload(seed, &db),
        Err(_) => (vec![Model::new()], 0), // Cut while creating: nothing was acknowledged.
    };
    let cut_seed = rng.next();
    // Recovery I/O count of this crash image (power_cut is deterministic per seed).
    let d1 = devs.power_cut(cut_seed);
    let probe = Trip::new(u64::MAX, &d1);
    let recovery_io = match open(&d1, &probe) {
        Ok(db) => {
            let got = dump(&db);
            let m = (0..states.len()).find(|j| states[*j] == got);
            if std::env::var("WAFER_CRASH_SEED").is_ok() {
                eprintln!(
                    "probe recovery matches state {m:?}, acked {acked}, {:?}",
                    db.stats().recovery
                );
            }
            probe.count.load(Ordering::SeqCst)
        }
        Err(e) => panic!("seed {seed}: recovery failed: {e}"),
    };
    // Cut the recovery itself, then recover from that.
    let d2 = devs.power_cut(cut_seed);
    let trip = Trip::new(rng.below(recovery_io + 1), &d2);
    let mut recovered_from_cut_recovery = false;
    let d3 = match open(&d2, &trip) {
        Ok(db) => {
            drop(db);
            d2
        }
        Err(_) => {
            totals.recovery_crashes += 1;
            recovered_from_cut_recovery = true;
            let s = rng.next();
            d2.power_cut(s)
        }
    };
    let trip = Trip::new(u64::MAX, &d3);
    let db = match open(&d3, &trip) {
        Ok(db) => db,
        Err(e) => panic!("seed {seed}: recovery after a cut recovery failed: {e}"),
    };
    if let Some(r) = db.stats().recovery {
        totals.torn_repaired += r.store.torn_pages_repaired;
        totals.redo_applied += r.redo.applied;
        totals.discarded += r.redo.discarded;
    }
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed}: check after recovery: {report}");
    totals.power_cuts += 1 + u64::from(recovered_from_cut_recovery);
    let got = dump(&db);
    let matched = (acked..states.len()).find(|j| states[*j] == got);
    if matched.is_none() {
        for (j, state) in states.iter().enumerate() {
            let diff = state
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(*v))
                .map(|(k, _)| k.clone())
                .chain(got.keys().filter(|k| !state.contains_key(*k)).cloned())
                .collect::<Vec<_>>();
            eprintln!(
                "state {j}: {} entries, {} differ {:?}",
                states[j].len(),
                diff.len(),
                diff.iter()
                    .take(4)
                    .map(|(t, k)| format!("{t}/{}", String::from_utf8_lossy(k)))
                    .collect::<Vec<_>>()
            );
        }
    }
    assert!(
        matched.is_some(),
        "seed {seed}: recovered state matches no batch from the last acknowledged ({acked}) to \
         the last attempted ({}); recovered {} entries",
        states.len() - 1,
        got.len()
    );
    // The recovered database takes writes and survives a clean reopen.
    let t = db.tree("a").unwrap();
    t.put_with(b"after", b"recovery", Durability::Sync).unwrap();
    db.close().unwrap();
    let db = open(&d3, &trip).unwrap();
    assert_eq!(db.tree("a").unwrap().get(b"after").unwrap(), Some(b"recovery".to_vec()));
}

#[test]
fn power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    let mut totals = power_cut_seeds(100);
    // Which writes a cut finds unsynced depends on the background threads' timing: on a loaded
    // machine 100 seeds have torn no page the doublewrite area had to repair. More seeds until
    // one does (bounded), so the repair path is exercised on every run.
    let mut next = 100u64;
    while totals.seeds >= 50 && totals.torn_repaired == 0 && next < 400 {
        run_seeds(&(next..next + 50).collect::<Vec<_>>(), &mut totals);
        next += 50;
    }
    if totals.seeds >= 50 {
        assert!(totals.torn_repaired > 0, "no torn page was repaired: {totals:?}");
    }
}

/// The same cuts out of place: no doublewrite (nothing torn is ever referenced), cuts fall
/// inside GC cycles, map snapshots and journal flushes too.
#[test]
fn out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[], 60);
}

/// The same with every page compressed (LZ4) and packed: cuts during packed appends, GC moves
/// of packed slots, snapshots and journal flushes.
#[test]
fn compressed_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&COMPRESSED], 60);
}

/// The same with packing off: compressed pages concatenated, some crossing into the next
/// slot, so a cut can tear a page across two slots and GC moves pages that span two.
#[test]
fn concatenated_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&COMPRESSED, &CONCATENATED], 40);
}

/// The same with grouping by deathtime and compression: cuts while a batch is spread over
/// several open zones and while one GC cycle moves the pages of several victims.
#[test]
fn gdt_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&COMPRESSED, &GDT], 40);
}

/// The same with GC through the buffer pool: cuts while victims' survivors wait in the pool as
/// dirty pages, while evictions write them out among user pages, and while a victim's zone
/// waits for the log before its reset; a cut before the survivors' copies are durable must
/// recover the map pointing at the old copies, which are still in place.
#[test]
fn gc_in_pool_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    let totals = out_of_place_cuts(&[&GC_IN_POOL], 60);
    assert!(totals.gc_pool_survivors > 0, "no survivor went to the pool: {totals:?}");
}

/// The same with GDT (the artifact's placement choices group the eviction
/// batches the survivors ride in).
#[test]
fn gc_in_pool_gdt_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    let totals = out_of_place_cuts(&[&GC_IN_POOL, &GDT], 40);
    assert!(totals.gc_pool_survivors > 0, "no survivor went to the pool: {totals:?}");
}

/// The same with NoWA on top: cuts while a batch is routed into another group's open zone and
/// while a compensation moves the remaining pages of a partly dead unit.
#[test]
fn nowa_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&COMPRESSED, &GDT, &NOWA], 40);
}

/// The same on a ZNS SSD with compression and GDT: cuts during zone appends (a prefix of each
/// zone's unsynced appends survives), zone resets and finishes (each happened or not), and
/// the recovery that finishes the zones it closes.
#[test]
fn zns_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&COMPRESSED, &GDT, &ZNS], 40);
}

/// The same on a CCZNS SSD with `compression = device` (002): cuts during compressed writes
/// (a prefix of whole blocks of each zone survives, with the chunks wholly inside it), padding
/// zone opens, decompressed reads in GC and recovery, resets and finishes.
#[test]
fn cczns_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&GDT, &ZNS, &CCZNS], 40);
}

/// In place with blobs: blob pages go straight home (no doublewrite), before their batch.
#[test]
fn blob_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    BLOBS.set(true);
    let totals = power_cut_seeds(60);
    assert!(totals.redo_applied > 0, "{totals:?}");
}

/// In place with every value a blob: cuts land among folds of the free-extent tree, and
/// recovery rebuilds the free extents from the tree as redone and the changes since its fold.
#[test]
fn blob_fold_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    BLOBS.set(true);
    ALL_BLOBS.set(true);
    let totals = power_cut_seeds(40);
    assert!(totals.folds > 0, "the cuts must fall among free-extent folds: {totals:?}");
}

/// The same out of place, with compression: folds among GC cycles and map snapshots.
#[test]
fn blob_fold_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    ALL_BLOBS.set(true);
    let totals = out_of_place_cuts(&[&BLOBS, &COMPRESSED], 30);
    assert!(totals.folds > 0, "the cuts must fall among free-extent folds: {totals:?}");
}

/// Out of place with blobs, compression, GDT and NoWA: blob pages placed, packed and moved by
/// GC, staged until the log writes, and dropped once no commit names them.
#[test]
fn blob_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    out_of_place_cuts(&[&BLOBS, &COMPRESSED, &GDT, &NOWA], 40);
}

/// In place on a data device that starts at 16 pages and grows as the tree and its blobs
/// need: cuts land among growths, blob writes and checkpoints, and recovery reads pages past
/// the size the database was created at.
#[test]
fn growing_file_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    GROWTH.set(true);
    BLOBS.set(true);
    let totals = power_cut_seeds(60);
    assert_eq!(totals.grown, totals.seeds, "every dry run grows its device: {totals:?}");
}

/// The same out of place, with compression and GDT: zones added among GC cycles, map
/// snapshots and journal flushes, and recovery rebuilding zones past the created size.
#[test]
fn growing_file_out_of_place_power_cuts_lose_no_acknowledged_batch_and_no_half_batch() {
    GROWTH.set(true);
    out_of_place_cuts(&[&BLOBS, &COMPRESSED, &GDT], 40);
}

/// Power cuts out of place with `features` switched on (this test's thread only).
fn out_of_place_cuts(
    features: &[&'static std::thread::LocalKey<std::cell::Cell<bool>>],
    seeds: u64,
) -> Totals {
    OUT_OF_PLACE.set(true);
    for f in features {
        f.set(true);
    }
    let totals = power_cut_seeds(seeds);
    assert_eq!(totals.torn_repaired, 0, "out of place never doublewrites");
    assert!(totals.gc_cycles > 0, "the cuts must fall among GC cycles: {totals:?}");
    totals
}

/// Runs `seeds`, adding to `totals`; a failing seed is printed for a rerun.
fn run_seeds(seeds: &[u64], totals: &mut Totals) {
    for &seed in seeds {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_seed(seed, totals)));
        if let Err(e) = r {
            eprintln!("crash test failed at seed {seed} (rerun: WAFER_CRASH_SEED={seed})");
            std::panic::resume_unwind(e);
        }
    }
    totals.seeds += seeds.len() as u64;
}

fn power_cut_seeds(default_seeds: u64) -> Totals {
    let seeds: Vec<u64> = match std::env::var("WAFER_CRASH_SEED") {
        Ok(s) => vec![s.parse().unwrap()],
        Err(_) => {
            let n = std::env::var("WAFER_CRASH_SEEDS").ok().and_then(|v| v.parse().ok());
            (0..n.unwrap_or(default_seeds)).collect()
        }
    };
    let mut totals = Totals::default();
    run_seeds(&seeds, &mut totals);
    eprintln!("{} seeds: {totals:?}", seeds.len());
    if seeds.len() >= 50 {
        assert!(totals.recovery_crashes > 0, "no recovery was cut: {totals:?}");
        assert!(totals.redo_applied > 0 && totals.checkpoints_seen > 0, "{totals:?}");
    }
    totals
}

#[test]
fn io_error_poisons_until_reopen_and_reopen_recovers() {
    let devs = Devices::fresh();
    let trip = Trip::new(u64::MAX, &devs);
    let db = open(&devs, &trip).unwrap();
    let t = db.tree("a").unwrap();
    for i in 0..50u32 {
        t.put_with(&i.to_be_bytes(), b"v", Durability::Sync).unwrap();
    }
    // The next WAL write fails.
    devs.wal.fail_all_after(devs.wal.io_count());
    let err = t.put_with(b"x", b"y", Durability::Sync).unwrap_err();
    assert!(
        matches!(
            err,
            wafer::CommitError::Storage(
                wafer::StorageError::Wal(_) | wafer::StorageError::Device(_)
            )
        ),
        "{err}"
    );
    devs.wal.clear_faults();
    assert!(matches!(t.put(b"z", b"z"), Err(wafer::CommitError::Poisoned)));
    assert!(matches!(db.write(&WriteBatch::new()), Err(wafer::CommitError::Poisoned)));
    assert_eq!(t.get(&7u32.to_be_bytes()).unwrap(), Some(b"v".to_vec()), "reads go on");
    drop(db);
    let db = open(&devs, &trip).unwrap();
    let t = db.tree("a").unwrap();
    for i in 0..50u32 {
        assert_eq!(t.get(&i.to_be_bytes()).unwrap(), Some(b"v".to_vec()));
    }
    t.put(b"z", b"z").unwrap();
    db.close().unwrap();
}
