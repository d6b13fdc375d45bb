#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Durability with concurrent writers: four threads commit (Sync, GroupCommit and None mixed) to
//! their own key ranges while power is cut at a random I/O; after recovery each thread's keys
//! must be a prefix of its writes that covers every acknowledged durable one. And a log much
//! smaller than the data written: checkpoints make room, the user never sees `LogFull`.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wafer::device::{Device, DeviceError, FaultDevice, ReadOp, WriteOp};
use wafer::error::WalError;
use wafer::{Db, Durability, Options, WriteBatch};

#[derive(Debug)]
struct Trip {
    count: AtomicU64,
    target: u64,
    devices: [Arc<FaultDevice>; 2],
}

#[derive(Debug)]
struct TripDevice {
    inner: Arc<FaultDevice>,
    trip: Arc<Trip>,
}

impl TripDevice {
    fn tick(&self) {
        if self.trip.count.fetch_add(1, Ordering::SeqCst) == self.trip.target {
            for d in &self.trip.devices {
                d.crash_at_io(d.io_count());
            }
        }
    }
}

impl Device for TripDevice {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.tick();
        self.inner.read_batch(ops)
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        self.tick();
        self.inner.write_batch(ops)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.tick();
        self.inner.sync()
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.tick();
        self.inner.trim(offset, len)
    }
}

fn options() -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(24 * 4096);
    o.wal_capacity_bytes = 1 << 20;
    o.checkpoint_log_bytes = 128 << 10;
    o
}

fn open(data: &Arc<FaultDevice>, wal: &Arc<FaultDevice>, target: u64) -> wafer::Result<Db> {
    let trip =
        Arc::new(Trip { count: AtomicU64::new(0), target, devices: [data.clone(), wal.clone()] });
    let d = Arc::new(TripDevice { inner: data.clone(), trip: trip.clone() });
    let w = Arc::new(TripDevice { inner: wal.clone(), trip });
    Ok(Db::open_on_devices(d, w, options())?)
}

fn key(t: u64, i: u64) -> Vec<u8> {
    format!("t{t}-{i:05}").into_bytes()
}
fn value(t: u64, i: u64) -> Vec<u8> {
    vec![(t * 31 + i) as u8; 20 + ((i * 37) % 300) as usize]
}

const THREADS: u64 = 4;
const WRITES: u64 = 120;

#[test]
fn concurrent_writers_keep_acknowledged_prefixes_across_power_cuts() {
    let seeds = std::env::var("WAFER_THREAD_CRASH_SEEDS").ok().and_then(|v| v.parse().ok());
    let (mut total_acked, mut total_recovered, mut cut_mid) = (0u64, 0u64, 0u64);
    for seed in 0..seeds.unwrap_or(30u64) {
        let (data, wal) =
            (Arc::new(FaultDevice::new(8 << 20)), Arc::new(FaultDevice::new(1 << 20)));
        // About 2 I/Os per write plus evictions: cut anywhere in the first 200.
        let target = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7) % 200;
        let acked: Vec<u64> = match open(&data, &wal, target) {
            Err(_) => vec![0; THREADS as usize],
            Ok(db) => {
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let db = db.clone();
                        std::thread::spawn(move || {
                            let tree = db.tree(&format!("tree{}", t % 2)).ok();
                            let Some(tree) = tree else { return 0 };
                            let mut acked = 0;
                            for i in 0..WRITES {
                                let d = match i % 3 {
                                    0 => Durability::Sync,
                                    1 => Durability::GroupCommit {
                                        max_delay: Duration::from_micros(200),
                                    },
                                    _ => Durability::None,
                                };
                                let r = if i % 7 == 6 {
                                    let mut b = WriteBatch::new();
                                    b.put(tree.name(), &key(t, i), &value(t, i));
                                    db.write_with(&b, d)
                                } else {
                                    tree.put_with(&key(t, i), &value(t, i), d)
                                };
                                match r {
                                    Ok(()) if d != Durability::None => acked = i + 1,
                                    Ok(()) => {}
                                    Err(_) => break,
                                }
                            }
                            acked
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            }
        };
        let cut = seed ^ 0xABCD;
        total_acked += acked.iter().sum::<u64>();
        cut_mid += u64::from(!data.is_powered());
        let (d2, w2) = (Arc::new(data.power_cut(cut)), Arc::new(wal.power_cut(cut)));
        let db = open(&d2, &w2, u64::MAX)
            .unwrap_or_else(|e| panic!("seed {seed}: recovery failed: {e}"));
        for t in 0..THREADS {
            let tree = db.tree(&format!("tree{}", t % 2)).unwrap();
            let mut present = 0;
            while present < WRITES && tree.get(&key(t, present)).unwrap().is_some() {
                present += 1;
            }
            total_recovered += present;
            assert!(
                present >= acked[t as usize],
                "seed {seed}: thread {t} acknowledged {} writes, {present} recovered",
                acked[t as usize]
            );
            for i in 0..WRITES {
                let got = tree.get(&key(t, i)).unwrap();
                if i < present {
                    assert_eq!(got, Some(value(t, i)), "seed {seed}: thread {t} write {i}");
                } else {
                    assert_eq!(got, None, "seed {seed}: thread {t}: write {i} after a gap");
                }
            }
        }
        db.close().unwrap();
    }
    eprintln!("acknowledged {total_acked}, recovered {total_recovered}, cut mid-run {cut_mid}");
    assert!(cut_mid > 0 && total_acked > 0);
}

#[test]
fn a_small_log_is_recycled_by_checkpoints_and_never_full_for_the_user() {
    let (data, wal) = (Arc::new(FaultDevice::new(8 << 20)), Arc::new(FaultDevice::new(256 << 10)));
    let mut o = options();
    o.wal_capacity_bytes = 256 << 10;
    o.checkpoint_log_bytes = 250 << 10; // The trigger alone would come too late.
    let db = Db::open_on_devices(data.clone(), wal.clone(), o.clone()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..3000u32 {
        t.put(&i.to_be_bytes(), &[i as u8; 200]).unwrap();
    }
    let stats = db.stats();
    assert!(stats.checkpoints >= 3, "{stats:?}");
    let written = stats.wal.unwrap().device_bytes_written;
    assert!(written > 3 * (256 << 10), "the log went round laps: {written} bytes");
    // A batch that can never fit the log is refused whole, without poisoning.
    let mut big = WriteBatch::new();
    for i in 0..200u32 {
        big.put("t", &i.to_le_bytes(), &[1u8; 2000]);
    }
    let err = db.write(&big).unwrap_err();
    assert!(
        matches!(
            err,
            wafer::CommitError::Storage(wafer::StorageError::Wal(WalError::LogFull { .. }))
        ),
        "{err}"
    );
    t.put(b"still", b"writable").unwrap();
    db.close().unwrap();
    let db = Db::open_on_devices(data, wal, o).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(&2999u32.to_be_bytes()).unwrap(), Some(vec![2999u32 as u8; 200]));
    assert_eq!(t.get(b"still").unwrap(), Some(b"writable".to_vec()));
}

#[test]
fn interval_trigger_checkpoints_on_writes() {
    let (data, wal) = (Arc::new(FaultDevice::new(8 << 20)), Arc::new(FaultDevice::new(1 << 20)));
    let mut o = options();
    o.checkpoint_interval = Some(Duration::ZERO);
    let db = Db::open_on_devices(data, wal, o).unwrap();
    let t = db.tree("t").unwrap();
    let before = db.stats().checkpoints;
    for i in 0..10u32 {
        t.put(&i.to_be_bytes(), b"v").unwrap();
    }
    assert_eq!(db.stats().checkpoints - before, 10, "one checkpoint per write at interval 0");
    db.close().unwrap();
}
