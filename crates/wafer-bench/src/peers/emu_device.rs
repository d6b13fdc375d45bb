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
//! The device is as large as `space_per_dataset` times the records' bytes (rounded up to whole
//! blocks per chip), so each engine's own files, not a filler, take most of it, as 000
//! Figure 1's SSD is 90% full of the database; what an engine needs beyond it is a row error
//! ("No space left on device"), not a device made to fit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use flashemu::{Config, Counters, StoreKind};
use flashemu_fuse::{LoopFs, ServerChild, Stats};

use super::PeerError;

/// Bound on the filler file's writes (1 MiB each): a 1 TiB device at most.
const FILL_CHUNKS_MAX: u64 = 1 << 20;
const FILL_CHUNK_BYTES: usize = 1 << 20;
/// The smallest device sizing gives: ext4's journal and inode tables, Wafer's 64 MiB file
/// minimum and its WAL must fit beside a tiny dataset.
const LOGICAL_MIN_BYTES: u64 = 256 << 20;
/// Bound on the blocks-per-chip search (the emulator's 2^32-slot maps end it sooner).
const BLOCKS_PER_CHIP_MAX: u32 = 1 << 16;
/// How long the server may take to mount, and each stop step to act.
const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(30);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Which emulated SSD, how large and how full.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuDevice {
    /// `emu:PRESET`, as rows name the device.
    pub name: String,
    /// The preset with the user's overrides; sizing may change its blocks per chip.
    pub config: Config,
    /// Logical bytes per byte of records (keys and values), or None to keep the preset's
    /// geometry as given.
    pub space_per_dataset: Option<f64>,
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
        space_per_dataset: Option<f64>,
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
        if let Some(s) = space_per_dataset {
            if !(s.is_finite() && (1.0..=100.0).contains(&s)) {
                return Err(bad(format!("device space {s}x the dataset: expected 1..=100")));
            }
        }
        Ok(EmuDevice { name: spec.to_string(), config, space_per_dataset, fill })
    }

    /// The device for a dataset of `dataset_bytes`: the fewest blocks per chip whose logical
    /// capacity holds `space_per_dataset` times it (at least 256 MiB).
    pub fn sized_config(&self, dataset_bytes: u64) -> Result<Config, PeerError> {
        let Some(space) = self.space_per_dataset else { return Ok(self.config.clone()) };
        let want = ((dataset_bytes as f64 * space) as u64).max(LOGICAL_MIN_BYTES);
        let mut config = self.config.clone();
        for blocks in 1..=BLOCKS_PER_CHIP_MAX {
            config.geometry.blocks_per_chip = blocks;
            if config.validate().is_err() {
                continue;
            }
            if config.layout().logical_blocks * flashemu::LBA_BYTES >= want {
                return Ok(config);
            }
        }
        Err(PeerError::Config(format!(
            "{}: no geometry of this preset holds {want} bytes",
            self.name
        )))
    }

    pub fn describe(&self, dataset_bytes: u64) -> serde_json::Value {
        let config = self.sized_config(dataset_bytes).unwrap_or_else(|_| self.config.clone());
        let layout = config.layout();
        let logical_bytes = layout.logical_blocks * flashemu::LBA_BYTES;
        serde_json::json!({
            "name": self.name,
            "space_per_dataset": self.space_per_dataset,
            "fill": self.fill,
            "blocks_per_chip": config.geometry.blocks_per_chip,
            "logical_bytes": logical_bytes,
            "physical_bytes": layout.physical_slots * flashemu::LBA_BYTES,
            "logical_per_dataset": logical_bytes as f64 / dataset_bytes.max(1) as f64,
            "op": config.op,
            "gc_policy": format!("{:?}", config.gc.policy),
            "path": "engine files -> ext4 (discard) -> loop device -> FUSE file -> \
                     `wafer emu serve` (child process) -> flashemu",
        })
    }
}

/// One engine's emulated SSD as the harness holds it: the server child and ext4 on a loop
/// device over its file. Torn down in reverse by [`Staged::destroy`] (or on drop: the
/// filesystem detached, the server killed).
#[derive(Debug)]
pub(crate) struct Staged {
    // Field order is drop order: the filesystem before the device under it.
    fs: Option<LoopFs>,
    server: ServerChild,
    view: EmuView,
}

impl Staged {
    /// A fresh device under `dir`: the server's files and mount at DIR/emu, ext4 at DIR/fs.
    /// `exe` is the `wafer` binary (`exe emu serve` is the server).
    pub(crate) fn create(
        device: &EmuDevice,
        dataset_bytes: u64,
        exe: &Path,
        dir: &Path,
    ) -> Result<Staged, PeerError> {
        let config = device.sized_config(dataset_bytes)?;
        let server = ServerChild::spawn(exe, &["emu", "serve"], &config, dir, SERVER_READY_TIMEOUT)
            .map_err(emu_error)?;
        let fs_dir = dir.join("fs");
        let fs = LoopFs::create(&server.device_path(), &fs_dir).map_err(emu_error)?;
        let view = EmuView { fs_dir, stats_path: server.stats_path(), fill: device.fill };
        Ok(Staged { fs: Some(fs), server, view })
    }

    /// What the engine's process needs of the device.
    pub(crate) fn view(&self) -> &EmuView {
        &self.view
    }

    /// Kills the server now: every request still waiting on the device fails, so a process
    /// stuck in one can exit.
    pub(crate) fn kill_server(&mut self) {
        self.server.kill();
    }

    /// Unmounts the filesystem (lazily if something still holds it), detaches the loop
    /// device and stops the server; returns its final counters.
    pub(crate) fn destroy(mut self) -> Result<Stats, PeerError> {
        let fs_done = match self.fs.take() {
            Some(fs) => fs.destroy().map_err(emu_error),
            None => Ok(()),
        };
        let stats = self.server.stop(SERVER_STOP_TIMEOUT).map_err(emu_error);
        fs_done?;
        stats
    }
}

/// The device as the engine's process sees it: a filesystem directory and the counters file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct EmuView {
    pub fs_dir: PathBuf,
    pub stats_path: PathBuf,
    pub fill: f64,
}

impl EmuView {
    /// Where the engine's directory goes.
    pub(crate) fn engine_dir(&self) -> PathBuf {
        self.fs_dir.join("db")
    }

    /// The device's counters once everything the filesystem holds dirty has reached it.
    pub(crate) fn counters(&self) -> Result<Counters, PeerError> {
        sync_fs(&self.fs_dir)?;
        let text = std::fs::read_to_string(&self.stats_path)
            .map_err(|e| PeerError::io(&self.stats_path, e))?;
        let stats = Stats::from_json(&text).map_err(emu_error)?;
        Ok(stats.counters)
    }

    /// (total, used) bytes of the filesystem.
    pub(crate) fn usage(&self) -> Result<(u64, u64), PeerError> {
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
