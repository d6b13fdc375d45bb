//! The layer the CCZNS experiment measures: the Wafer engine, out of place on an emulated ZNS
//! SSD behind a `ZonedVolume` (superblock, map snapshots and map journal on a conventional
//! metadata device in memory; DB zones are the SSD's zones, docs/internals/oop.md "ZNS").
//!
//! The schemes differ in one engine option, `compression`: `none`; `lz4` and `zstd` (level 1,
//! as 002) compress each 4 KiB page on the host and pack the results several to a slot
//! (000 sec. 3); `device` hands the pages raw to the SSD in compressed writes and reads them
//! with decompressed reads (002; the SSD places chunks on 32-byte units,
//! `cczns.chunk_align_bytes`, the map's offset unit). The SSD is the same for all, CW/DR on
//! for the device scheme only.
//!
//! Records: a 24-byte YCSB key, a Table III value of text (records.rs), one B-tree. A value
//! above the engine's 2048-byte limit (the B-tree has no overflow pages; Amazon's top ~10%)
//! is stored as consecutive parts under the key with a part suffix. The engine
//! runs on the driver's thread (background write-back and GC off, no WAL), so its host CPU is
//! the thread's less the device calls (cpu.rs). Every read is checked against the bytes
//! written.
use std::sync::Arc;

use flashemu::{Config, Counters, TimingReport};
use wafer::device::{Device, EmuDevice, MemoryDevice, ZonedVolume, BLOCK_BYTES};
use wafer::options::Compression;
use wafer::{Db, Options, Tree};

use super::cpu::{CpuClock, DeviceClock};
use super::records::{key_bytes, TextValues};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    None,
    Lz4,
    Zstd,
    Device,
}

pub const SCHEMES: [Scheme; 4] = [Scheme::None, Scheme::Lz4, Scheme::Zstd, Scheme::Device];

impl Scheme {
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::None => "none",
            Scheme::Lz4 => "lz4",
            Scheme::Zstd => "zstd",
            Scheme::Device => "device",
        }
    }

    /// The engine's page compression for this scheme.
    pub fn compression(&self) -> Compression {
        match self {
            Scheme::None => Compression::None,
            Scheme::Lz4 => Compression::Lz4,
            Scheme::Zstd => Compression::Zstd { level: 1 },
            Scheme::Device => Compression::Device,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Engine(#[from] wafer::Error),
    #[error(transparent)]
    Device(#[from] wafer::device::DeviceError),
    #[error("read of key {key} returned other bytes than were written")]
    Mismatch { key: u64 },
}

// The engine's per-operation errors join the one `Engine` variant, kept whole.
wafer::from_operation_errors!(DriverError, DriverError::Engine);

/// The engine on one emulated SSD, and what it needs to check its reads.
pub struct Driver {
    db: Db,
    tree: Tree,
    emu: Arc<EmuDevice>,
    volume: Arc<DeviceClock<ZonedVolume>>,
    text: TextValues,
    /// Each key's latest (version, value length); length 0: never written.
    latest: Vec<(u32, u32)>,
    pub cpu: CpuClock,
    value: Vec<u8>,
    got: Vec<u8>,
    pub verified_reads: u64,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("keys", &self.latest.len()).finish()
    }
}

/// Largest value part: the engine's value limit.
const VALUE_PART_BYTES: usize = 2048;

/// Parts a value of `len` bytes is stored in (0 for none).
fn parts(len: u32) -> usize {
    (len as usize).div_ceil(VALUE_PART_BYTES)
}

/// The key of part `i` of `key`'s value: the YCSB key, and for later parts a suffix.
fn part_key(key: u64, i: usize) -> Vec<u8> {
    let mut k = key_bytes(key).to_vec();
    if i > 0 {
        k.extend_from_slice(format!("#{i}").as_bytes());
    }
    k
}

/// The engine's options for `scheme` with a pool of `pool_bytes`.
pub fn engine_options(scheme: Scheme, pool_bytes: u64) -> Options {
    let mut o = Options::production().out_of_place().with_buffer_pool_bytes(pool_bytes);
    // One thread: the driver's CPU time is the engine's.
    o.background_write_back = false;
    o.out_of_place.background_gc = false;
    o.durability = wafer::Durability::None;
    o.data_offset_bytes = BLOCK_BYTES;
    o.out_of_place.compression = scheme.compression();
    o
}

impl Driver {
    /// A fresh database for `scheme` on an SSD built from `config` (a ZNS one), with room for
    /// `records` keys.
    pub fn new(
        scheme: Scheme,
        config: Config,
        records: u64,
        text: TextValues,
        pool_bytes: u64,
    ) -> Result<Driver, DriverError> {
        let cpu = CpuClock::start();
        let emu = Arc::new(EmuDevice::new(config)?);
        let options = engine_options(scheme, pool_bytes);
        let zones = emu.capabilities().zones.ok_or(wafer::device::DeviceError::Unsupported(
            "the CCZNS experiment needs a ZNS SSD",
        ))?;
        let meta_bytes = wafer::internals::oop::metadata_device_bytes(
            &zones,
            options.data_offset_bytes,
            &options.out_of_place,
            true,
        )?;
        let meta = Arc::new(MemoryDevice::new(meta_bytes.next_multiple_of(BLOCK_BYTES)));
        let volume = Arc::new(cpu.clocked(ZonedVolume::new(meta, emu.clone())?));
        let db = Db::open_on(volume.clone(), options)?;
        let tree = db.tree("usertable")?;
        let latest = vec![(0, 0); records as usize];
        let (value, got) = (Vec::new(), Vec::new());
        Ok(Driver { db, tree, emu, volume, text, latest, cpu, value, got, verified_reads: 0 })
    }

    /// Writes `key` with a new value of `len` bytes (in parts above the engine's limit; parts
    /// an older, longer value had beyond the new one's are deleted).
    pub fn put(&mut self, key: u64, len: u32) -> Result<(), DriverError> {
        let slot = &mut self.latest[key as usize];
        let old_parts = parts(slot.1);
        *slot = (slot.0 + 1, len.max(1));
        self.text.value(key, slot.0, slot.1, &mut self.value);
        for (i, part) in self.value.chunks(VALUE_PART_BYTES).enumerate() {
            self.tree.put(&part_key(key, i), part)?;
        }
        for i in parts(slot.1)..old_parts {
            self.tree.delete(&part_key(key, i))?;
        }
        Ok(())
    }

    /// Reads `key` (all its parts) and checks it holds its latest value (the check's time is
    /// not the host's).
    pub fn get(&mut self, key: u64) -> Result<(), DriverError> {
        let (version, len) = self.latest[key as usize];
        self.got.clear();
        let mut found = true;
        let mut part = Vec::new();
        for i in 0..parts(len).max(1) {
            found &= self.tree.get_into(&part_key(key, i), &mut part)?;
            self.got.extend_from_slice(&part);
        }
        let (text, value, got) = (&self.text, &mut self.value, &self.got);
        let same = self.cpu.check(|| {
            if len == 0 {
                return !found;
            }
            text.value(key, version, len, value);
            found && got == value
        });
        if !same {
            return Err(DriverError::Mismatch { key });
        }
        self.verified_reads += 1;
        Ok(())
    }

    /// Writes every dirty page back (the end of a phase: its write volume is all on flash).
    pub fn flush(&mut self) -> Result<(), DriverError> {
        Ok(self.db.checkpoint()?)
    }

    pub fn restart_timing_window(&mut self) {
        self.emu.ssd().restart_timing_window();
    }

    pub fn timing_report(&self) -> Option<TimingReport> {
        self.emu.ssd().timing_report()
    }

    /// The SSD's flash counters (data zones only).
    pub fn ssd_counters(&self) -> Counters {
        self.emu.ssd().counters()
    }

    /// Bytes written to the metadata device (superblock, snapshots, map journal).
    pub fn metadata_bytes(&self) -> u64 {
        let all = self.volume.flash_counters().map_or(0, |c| c.host_write_bytes);
        all.saturating_sub(self.ssd_counters().host_write_bytes)
    }

    /// Raw page bytes the engine handed its store (the same page stream for every scheme but
    /// for eviction order) and the host's compression time, seconds.
    pub fn engine_figures(&self) -> (u64, f64) {
        let stats = self.db.stats();
        let pages = stats.logical.by_purpose.iter().sum::<u64>();
        let codec = stats.out_of_place.map_or(0, |o| o.codec.compress_ns + o.codec.decompress_ns);
        (pages, codec as f64 / 1e9)
    }
}
