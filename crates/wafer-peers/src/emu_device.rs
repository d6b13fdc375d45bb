//! The emulated SSD under a peer: a fresh device per engine, sized to the dataset, served over
//! FUSE by a child process (`wafer emu serve`), a loop device over it with ext4 mounted
//! `-o discard` (so every engine, Wafer included, reaches the flash the same way: its files,
//! the page cache, ext4, TRIM of freed extents).
//!
//! ```text
//!  harness: DIR/emu (FUSE: ssd, stats) <- child `wafer emu serve` (the emulator)
//!           /dev/loopN over DIR/emu/ssd, ext4 at DIR/fs
//!  worker:  DIR/fs/db (the engine), DIR/fs/filler (only with --fill); counters: DIR/emu/stats
//! ```
//!
//! How large the device is ([`EmuSpace`]): by default sized per engine so that the most space
//! the engine's files take at any time takes a stated share of it (`own:0.8`; the peak
//! measured by a sizing pass on the host first: the load of the same records and three updates
//! of each, so logs at their bound, checkpoints, compactions and dead tuples are in it), as
//! 000 Figure 1's SSD is 90% full of each database; or a multiple of the records' bytes, the
//! same device for every engine (`dataset:2.5`); or the preset's geometry. Sizes round up to
//! whole blocks per chip (at least 128 MiB), blocks made smaller on small devices so GC's
//! reserve stays a few percent of them. What
//! an engine needs beyond the device is a row error ("No space left on device"), not a device
//! made to fit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use flashemu::{Config, Counters, StoreKind};
use flashemu_fuse::{LoopFs, ServerChild, Stats};

use super::error::PeerError;

/// Bound on the filler file's writes (1 MiB each): a 1 TiB device at most.
const FILL_CHUNKS_MAX: u64 = 1 << 20;
const FILL_CHUNK_BYTES: usize = 1 << 20;
/// The smallest device sizing gives: ext4's journal and inode tables, Wafer's 64 MiB file
/// minimum and its 16 MiB WAL must fit beside a tiny dataset.
const LOGICAL_MIN_BYTES: u64 = 128 << 20;
/// Sizing makes blocks smaller until a device has this many superblocks (the 4 GiB presets
/// have 256).
const SUPERBLOCKS_MIN: u32 = 128;
/// The smallest block sizing goes to: 8 flash pages (128 KiB of 16 KiB pages).
const PAGES_PER_BLOCK_MIN: u32 = 8;
/// Bound on the blocks-per-chip search (the emulator's 2^32-slot maps end it sooner).
const BLOCKS_PER_CHIP_MAX: u32 = 1 << 16;
/// How long the server may take to mount, and each stop step to act.
const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(30);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// The fewest blocks per chip of `config`'s geometry whose logical capacity holds `want`.
fn fewest_blocks_holding(config: &Config, want: u64) -> Option<Config> {
    let mut config = config.clone();
    for blocks in 1..=BLOCKS_PER_CHIP_MAX {
        config.geometry.blocks_per_chip = blocks;
        if config.validate().is_ok() && config.layout().logical_blocks * flashemu::LBA_BYTES >= want
        {
            return Some(config);
        }
    }
    None
}

/// Which emulated SSD, how large and how full.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmuDevice {
    /// `emu:PRESET`, as rows name the device.
    pub name: String,
    /// The preset with the user's overrides; sizing may change its blocks per chip and pages
    /// per block.
    pub config: Config,
    pub space: EmuSpace,
    /// Fraction of the filesystem's blocks in use once the engine has loaded, made up by a
    /// filler file nobody touches again; 0: no filler (the default: the engine's own files
    /// are what fills the device).
    pub fill: f64,
}

impl EmuDevice {
    /// `emu:PRESET` with `key=value` overrides in order; the store keeps bytes (a
    /// filesystem lives on it).
    pub fn parse(
        spec: &str,
        overrides: &[String],
        space: EmuSpace,
        fill: f64,
    ) -> Result<EmuDevice, PeerError> {
        let bad = |m: String| PeerError::Config(m);
        let Some(preset) = spec.strip_prefix("emu:") else {
            return Err(bad(format!("device `{spec}`: expected file or emu:PRESET")));
        };
        let mut config = Config::preset(preset).map_err(|e| bad(format!("{spec}: {e}")))?;
        for o in overrides {
            let (key, value) =
                o.split_once('=').ok_or_else(|| bad(format!("`{o}`: expected KEY=VALUE")))?;
            config.set(key.trim(), value.trim()).map_err(|e| bad(format!("`{o}`: {e}")))?;
        }
        if config.store == StoreKind::None {
            config.store = StoreKind::Memory;
        }
        config.validate().map_err(|e| bad(format!("{spec}: {e}")))?;
        if !(0.0..0.99).contains(&fill) {
            return Err(bad(format!("fill {fill}: expected a fraction in 0..0.99")));
        }
        space.check()?;
        if matches!(space, EmuSpace::Own(_)) && fill > 0.0 {
            // The filler goes in after the load, into room the engine was sized with: Wafer
            // out of place sizes its file from the free room at open and then runs out of it.
            return Err(bad(format!(
                "fill {fill} with space own:SHARE: the device is already sized by the engine's \
                 own peak; a filler would take the room it was sized with (use preset or \
                 dataset:FACTOR with a fill)"
            )));
        }
        Ok(EmuDevice { name: spec.to_string(), config, space, fill })
    }

    /// The device for a dataset of `dataset_bytes` and an engine whose files took
    /// `footprint_bytes` after loading it (needed by [`EmuSpace::Own`] only).
    pub fn sized_config(
        &self,
        dataset_bytes: u64,
        footprint_bytes: Option<u64>,
    ) -> Result<Config, PeerError> {
        let want = match (self.space, footprint_bytes) {
            (EmuSpace::Preset, _) => return Ok(self.config.clone()),
            (EmuSpace::PerDataset(f), _) => dataset_bytes as f64 * f,
            (EmuSpace::Own(share), Some(footprint)) => {
                footprint as f64 / share / EXT4_USABLE_SHARE + EXT4_JOURNAL_BYTES as f64
            }
            // Before the footprint is known (validation, the run's description): the smallest.
            (EmuSpace::Own(_), None) => 0.0,
        };
        self.config_holding(want as u64)
    }

    /// The fewest blocks per chip whose logical capacity holds `want` bytes (at least 128 MiB),
    /// with blocks made smaller (pages per block halved, down to [`PAGES_PER_BLOCK_MIN`]) until
    /// the device has [`SUPERBLOCKS_MIN`] superblocks: GC's reserve of free superblocks and
    /// the open ones are then a few percent of the device, as on the preset's 4 GiB, not most
    /// of its over-provisioning (a 400 MiB `ent` device of 16 MiB superblocks had 7 blocks per
    /// chip at least, and 4 of its 28 superblocks held back).
    pub(crate) fn config_holding(&self, want: u64) -> Result<Config, PeerError> {
        let want = want.max(LOGICAL_MIN_BYTES);
        let mut config = self.config.clone();
        let mut best = None;
        for _ in 0..16 {
            if let Some(sized) = fewest_blocks_holding(&config, want) {
                let enough = sized.layout().superblock_count >= SUPERBLOCKS_MIN;
                best = Some(sized);
                if enough {
                    break;
                }
            }
            if config.geometry.pages_per_block / 2 < PAGES_PER_BLOCK_MIN {
                break;
            }
            config.geometry.pages_per_block /= 2;
        }
        best.ok_or_else(|| {
            PeerError::Config(format!(
                "{}: no geometry of this preset holds {want} bytes",
                self.name
            ))
        })
    }

    pub fn describe(&self, dataset_bytes: u64) -> serde_json::Value {
        let mut d = describe_config(&self.config, dataset_bytes);
        if let Some(map) = d.as_object_mut() {
            map.insert("name".into(), self.name.clone().into());
            map.insert("space".into(), self.space.to_string().into());
            map.insert("fill".into(), self.fill.into());
            if self.space != EmuSpace::Preset {
                // Sized per run: each engine's settings give its own device.
                for key in ["blocks_per_chip", "pages_per_block", "superblock_bytes", "superblocks"]
                    .into_iter()
                    .chain(["logical_bytes", "physical_bytes", "logical_per_dataset"])
                {
                    map.remove(key);
                }
            }
        }
        d
    }
}

/// How a device is sized.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum EmuSpace {
    /// The preset's geometry (with the overrides) as given.
    Preset,
    /// Logical bytes per byte of records: one size for every engine.
    PerDataset(f64),
    /// Per engine: the peak of its files in a sizing pass (load, then three updates of each
    /// record on the host) takes this share of the filesystem.
    Own(f64),
}

/// The share of a device ext4 leaves for files (inode tables at one 256-byte inode per 16
/// KiB, group descriptors and bitmaps), and its journal (16 MiB below 1 GiB, more above: the
/// rounding up to whole blocks per chip covers the difference).
const EXT4_USABLE_SHARE: f64 = 0.98;
const EXT4_JOURNAL_BYTES: u64 = 16 << 20;

impl EmuSpace {
    /// The default: each engine's files at their peak take 90% of its device's filesystem
    /// (000's fill; a raw Wafer row: its records' pages 90% of its zone space, Table 1's).
    pub const DEFAULT: EmuSpace = EmuSpace::Own(0.9);

    /// `own:SHARE`, `dataset:FACTOR` or `preset`.
    pub fn parse(text: &str) -> Result<EmuSpace, PeerError> {
        let bad = |why: String| {
            PeerError::Config(format!(
                "emulated SSD space `{text}`: {why} (own:SHARE, dataset:FACTOR or preset)"
            ))
        };
        let number = |v: &str| v.trim().parse::<f64>().map_err(|e| bad(e.to_string()));
        let space = match text.trim().split_once(':') {
            None if text.trim() == "preset" => EmuSpace::Preset,
            Some(("own", v)) => EmuSpace::Own(number(v)?),
            Some(("dataset", v)) => EmuSpace::PerDataset(number(v)?),
            _ => return Err(bad("unknown form".into())),
        };
        space.check()?;
        Ok(space)
    }

    fn check(&self) -> Result<(), PeerError> {
        let bad = |m: String| Err(PeerError::Config(m));
        match *self {
            EmuSpace::PerDataset(f) if !(f.is_finite() && (1.0..=100.0).contains(&f)) => {
                bad(format!("device space {f}x the dataset: expected 1..=100"))
            }
            EmuSpace::Own(s) if !(s.is_finite() && (0.1..=0.98).contains(&s)) => {
                bad(format!("engine's share of the device {s}: expected 0.1..=0.98"))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for EmuSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmuSpace::Preset => write!(f, "preset"),
            EmuSpace::PerDataset(x) => write!(f, "dataset:{x}"),
            EmuSpace::Own(x) => write!(f, "own:{x}"),
        }
    }
}

/// A device's size and policy, as rows' settings state it.
pub(crate) fn describe_config(config: &Config, dataset_bytes: u64) -> serde_json::Value {
    let layout = config.layout();
    let logical_bytes = layout.logical_blocks * flashemu::LBA_BYTES;
    serde_json::json!({
        "blocks_per_chip": config.geometry.blocks_per_chip,
        "pages_per_block": config.geometry.pages_per_block,
        "superblock_bytes": u64::from(layout.slots_per_superblock) * flashemu::LBA_BYTES,
        "superblocks": layout.superblock_count,
        "logical_bytes": logical_bytes,
        "physical_bytes": layout.physical_slots * flashemu::LBA_BYTES,
        "logical_per_dataset": logical_bytes as f64 / dataset_bytes.max(1) as f64,
        "op": config.op,
        "gc_policy": format!("{:?}", config.gc.policy),
        "path": "engine files -> ext4 (discard) -> loop device -> FUSE file -> \
                 `wafer emu serve` (child process) -> flashemu",
    })
}

/// One engine's emulated SSD as the harness holds it: the server child and ext4 on a loop
/// device over its file. Torn down in reverse by [`Staged::destroy`] (or on drop: the
/// filesystem detached, the server killed).
#[derive(Debug)]
pub(crate) struct Staged {
    // Field order is drop order: the filesystem before the device under it.
    fs: Option<LoopFs>,
    server: ServerChild,
    /// A raw row's WAL device.
    wal_server: Option<ServerChild>,
    view: EmuView,
}

impl Staged {
    /// A fresh device under `dir`: the server's files and mount at DIR/emu, ext4 at DIR/fs.
    /// `exe` is the `wafer` binary (`exe emu serve` is the server).
    pub(crate) fn create(
        device: &EmuDevice,
        config: &Config,
        exe: &Path,
        dir: &Path,
    ) -> Result<Staged, PeerError> {
        let server = ServerChild::spawn(exe, &["emu", "serve"], config, dir, SERVER_READY_TIMEOUT)
            .map_err(emu_error)?;
        let fs_dir = dir.join("fs");
        let fs = LoopFs::create(&server.device_path(), &fs_dir).map_err(emu_error)?;
        let capacity_bytes = config.layout().logical_blocks * flashemu::LBA_BYTES;
        let view = EmuView {
            fs_dir,
            stats_path: server.stats_path(),
            fill: device.fill,
            capacity_bytes,
            wal_stats_path: None,
        };
        Ok(Staged { fs: Some(fs), server, wal_server: None, view })
    }

    /// Two fresh devices under `dir`, no filesystem: data (DIR/emu/ssd) and WAL
    /// (DIR/wal/emu/ssd), for a raw row. The view's counters are both devices' together; its
    /// capacity the data device's.
    pub(crate) fn create_raw(
        data: &Config,
        wal: &Config,
        exe: &Path,
        dir: &Path,
    ) -> Result<Staged, PeerError> {
        let spawn = |config: &Config, at: &Path| {
            ServerChild::spawn(exe, &["emu", "serve"], config, at, SERVER_READY_TIMEOUT)
                .map_err(emu_error)
        };
        let server = spawn(data, dir)?;
        let wal_server = spawn(wal, &dir.join("wal"))?;
        let view = EmuView {
            // Nothing to sync (the served file is opened for direct I/O): the engine's own
            // directory, whose usage is the settings' only use of it.
            fs_dir: dir.join("db"),
            stats_path: server.stats_path(),
            fill: 0.0,
            // Both devices' writes count towards a phase's volume: so do both capacities.
            capacity_bytes: logical_bytes(data) + logical_bytes(wal),
            wal_stats_path: Some(wal_server.stats_path()),
        };
        Ok(Staged { fs: None, server, wal_server: Some(wal_server), view })
    }

    /// The GC unit the data device's server reports in its stats document (None from a
    /// server that does not report it, or a document that cannot be read).
    pub(crate) fn reported_gc_unit_bytes(&self) -> Option<u64> {
        let text = std::fs::read_to_string(&self.view.stats_path).ok()?;
        Stats::from_json(&text).ok()?.gc_unit_bytes
    }

    pub(crate) fn device_path(&self) -> PathBuf {
        self.server.device_path()
    }

    pub(crate) fn wal_device_path(&self) -> Option<PathBuf> {
        self.wal_server.as_ref().map(ServerChild::device_path)
    }

    /// What the engine's process needs of the device.
    pub(crate) fn view(&self) -> &EmuView {
        &self.view
    }

    /// Kills the server now: every request still waiting on the device fails, so a process
    /// stuck in one can exit.
    pub(crate) fn kill_server(&mut self) {
        self.server.kill();
        if let Some(wal) = self.wal_server.as_mut() {
            wal.kill();
        }
    }

    /// Unmounts the filesystem (lazily if something still holds it), detaches the loop
    /// device and stops the servers; returns their final counters (data, WAL).
    pub(crate) fn destroy(mut self) -> Result<(Stats, Option<Stats>), PeerError> {
        let fs_done = match self.fs.take() {
            Some(fs) => fs.destroy().map_err(emu_error),
            None => Ok(()),
        };
        let wal = self.wal_server.take().map(|w| w.stop(SERVER_STOP_TIMEOUT).map_err(emu_error));
        let stats = self.server.stop(SERVER_STOP_TIMEOUT).map_err(emu_error);
        fs_done?;
        Ok((stats?, wal.transpose()?))
    }
}

/// The device as the engine's process sees it: a filesystem directory and the counters file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct EmuView {
    pub fs_dir: PathBuf,
    pub stats_path: PathBuf,
    pub fill: f64,
    /// The device's logical bytes (a raw row's: both devices'): the unit of a write phase's
    /// volume.
    pub capacity_bytes: u64,
    /// A raw row's WAL device: its counters add to the data device's.
    #[serde(default)]
    pub wal_stats_path: Option<PathBuf>,
}

impl EmuView {
    /// Where the engine's directory goes.
    pub(crate) fn engine_dir(&self) -> PathBuf {
        self.fs_dir.join("db")
    }

    /// The device's counters once everything the filesystem holds dirty has reached it.
    pub(crate) fn counters(&self) -> Result<Counters, PeerError> {
        // A raw row writes the served files directly (FUSE direct I/O): nothing to flush.
        if self.wal_stats_path.is_none() {
            sync_fs(&self.fs_dir)?;
        }
        self.counters_now()
    }

    /// A raw row: the devices under the engine, not the host's filesystem.
    pub(crate) fn is_raw(&self) -> bool {
        self.wal_stats_path.is_some()
    }

    /// The counters now, without a sync: what the kernel has written back by now (a write
    /// phase's volume, read every 100 ms).
    pub(crate) fn counters_unsynced(&self) -> Result<Counters, PeerError> {
        self.counters_now()
    }

    fn counters_now(&self) -> Result<Counters, PeerError> {
        let read = |path: &Path| -> Result<Counters, PeerError> {
            let text = std::fs::read_to_string(path).map_err(|e| PeerError::io(path, e))?;
            Ok(Stats::from_json(&text).map_err(emu_error)?.counters)
        };
        let data = read(&self.stats_path)?;
        match &self.wal_stats_path {
            Some(wal) => Ok(plus(&data, &read(wal)?)),
            None => Ok(data),
        }
    }

    /// (total, used) bytes of the filesystem; a raw row's: the data device's capacity and
    /// what its engine reports through its own settings (0 here).
    pub(crate) fn usage(&self) -> Result<(u64, u64), PeerError> {
        if self.is_raw() {
            return Ok((self.capacity_bytes, 0));
        }
        let space = fs_space(&self.fs_dir)?;
        Ok((space.total_bytes, space.used_bytes))
    }

    /// Writes a filler file until `fill` of the filesystem's blocks are in use (nothing when
    /// they already are). Returns the filler's bytes.
    pub(crate) fn fill_to(&self, fill: f64) -> Result<u64, PeerError> {
        let (total, used) = self.usage()?;
        let want = ((total as f64 * fill) as u64).saturating_sub(used);
        if want == 0 {
            return Ok(0);
        }
        let path = self.fs_dir.join("filler");
        let mut file = std::fs::File::create(&path).map_err(|e| PeerError::io(&path, e))?;
        // Not zeros: a filesystem or device that dedups or compresses zero blocks must not
        // make the fill free.
        let chunk: Vec<u8> = (0..FILL_CHUNK_BYTES).map(|i| (i * 131 % 251) as u8).collect();
        let mut written = 0u64;
        for _ in 0..FILL_CHUNKS_MAX {
            if written >= want {
                break;
            }
            let n = (want - written).min(FILL_CHUNK_BYTES as u64) as usize;
            file.write_all(&chunk[..n]).map_err(|e| PeerError::io(&path, e))?;
            written += n as u64;
        }
        file.sync_all().map_err(|e| PeerError::io(&path, e))?;
        Ok(written)
    }
}

/// A device's logical bytes.
pub(crate) fn logical_bytes(config: &Config) -> u64 {
    config.layout().logical_blocks * flashemu::LBA_BYTES
}

/// Two devices' counters together (the byte and event counts; the histogram and per-stream
/// bytes element by element).
fn plus(a: &Counters, b: &Counters) -> Counters {
    let mut sum = a.clone();
    for (x, y) in [
        (&mut sum.host_write_bytes, b.host_write_bytes),
        (&mut sum.host_read_bytes, b.host_read_bytes),
        (&mut sum.host_trim_bytes, b.host_trim_bytes),
        (&mut sum.flash_host_bytes, b.flash_host_bytes),
        (&mut sum.flash_gc_bytes, b.flash_gc_bytes),
        (&mut sum.flash_pad_bytes, b.flash_pad_bytes),
        (&mut sum.gc_copied_blocks, b.gc_copied_blocks),
        (&mut sum.gc_invocations, b.gc_invocations),
        (&mut sum.gc_victims, b.gc_victims),
        (&mut sum.block_erases, b.block_erases),
        (&mut sum.superblock_erases, b.superblock_erases),
        (&mut sum.cw_raw_bytes, b.cw_raw_bytes),
        (&mut sum.cw_stored_bytes, b.cw_stored_bytes),
        (&mut sum.cw_passthrough_chunks, b.cw_passthrough_chunks),
        (&mut sum.dr_raw_bytes, b.dr_raw_bytes),
    ] {
        *x += y;
    }
    for (x, y) in sum.victim_valid_hist.iter_mut().zip(b.victim_valid_hist) {
        *x += y;
    }
    for (i, y) in b.stream_host_bytes.iter().enumerate() {
        match sum.stream_host_bytes.get_mut(i) {
            Some(x) => *x += y,
            None => sum.stream_host_bytes.push(*y),
        }
    }
    sum
}

/// `syncfs` of the filesystem holding `dir`: its dirty data and metadata reach the device.
fn sync_fs(dir: &Path) -> Result<(), PeerError> {
    use std::os::fd::AsRawFd;
    let handle = std::fs::File::open(dir).map_err(|e| PeerError::io(dir, e))?;
    // SAFETY: syncfs takes an open descriptor we own for the duration of the call.
    let rc = unsafe { libc::syncfs(handle.as_raw_fd()) };
    if rc != 0 {
        return Err(PeerError::io(dir, std::io::Error::last_os_error()));
    }
    Ok(())
}

fn emu_error(e: impl std::fmt::Display) -> PeerError {
    PeerError::Config(format!("emulated SSD: {e}"))
}

/// A filesystem's size as `df` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FsSpace {
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// What an unprivileged writer may still use (root may use the reserve too).
    pub avail_bytes: u64,
}

/// The size of the filesystem holding `dir`.
pub(crate) fn fs_space(dir: &Path) -> Result<FsSpace, PeerError> {
    let c_path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|e| PeerError::Config(e.to_string()))?;
    // SAFETY: statvfs is plain data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a pointer to a statvfs we own.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(PeerError::io(dir, std::io::Error::last_os_error()));
    }
    let block = st.f_frsize;
    Ok(FsSpace {
        total_bytes: st.f_blocks * block,
        used_bytes: (st.f_blocks - st.f_bfree) * block,
        avail_bytes: st.f_bavail * block,
    })
}
