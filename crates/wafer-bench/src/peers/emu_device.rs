//! The emulated SSD under a peer: a fresh device per engine, served over FUSE, a loop device
//! over it with ext4 mounted `-o discard` (so every engine, Wafer included, reaches the flash
//! the same way: its files, the page cache, ext4, TRIM of freed extents), filled to the stated
//! utilization after the engine's load, as 000 Figure 1 runs on a 90%-full SSD.
//!
//! ```text
//!  DIR/emu (FUSE: ssd, stats) <- /dev/loopN <- ext4 at DIR/fs <- DIR/fs/db (the engine)
//!                                                             <- DIR/fs/filler (the fill)
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use flashemu::{Config, Counters, Ssd, StoreKind};
use flashemu_fuse::{serve, LoopFs, Served};

use super::PeerError;

/// Bound on the filler file's writes (1 MiB each): a 1 TiB device at most.
const FILL_CHUNKS_MAX: u64 = 1 << 20;
const FILL_CHUNK_BYTES: usize = 1 << 20;
/// Unmount attempts while the loop device lets go of the file (it may take a moment).
const UNMOUNT_ATTEMPTS: u32 = 50;

/// Which emulated SSD and how full.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuDevice {
    /// `emu:PRESET`, as rows name the device.
    pub name: String,
    pub config: Config,
    /// Fraction of the filesystem's blocks in use once the engine has loaded (the rest of the
    /// fill is a file nobody touches again): 0.9 is 000 Figure 1's 90%-full SSD.
    pub fill: f64,
}

impl EmuDevice {
    /// `emu:PRESET` with `key=value` overrides in order; the store keeps bytes (a
    /// filesystem lives on it).
    pub fn parse(spec: &str, overrides: &[String], fill: f64) -> Result<EmuDevice, PeerError> {
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
        Ok(EmuDevice { name: spec.to_string(), config, fill })
    }

    pub fn describe(&self) -> serde_json::Value {
        let layout = self.config.layout();
        serde_json::json!({
            "name": self.name,
            "fill": self.fill,
            "logical_bytes": layout.logical_blocks * flashemu::LBA_BYTES,
            "physical_bytes": layout.physical_slots * flashemu::LBA_BYTES,
            "op": self.config.op,
            "gc_policy": format!("{:?}", self.config.gc.policy),
            "path": "engine files -> ext4 (discard) -> loop device -> FUSE file -> flashemu",
        })
    }
}

/// One engine's emulated SSD, mounted; torn down in reverse on drop.
#[derive(Debug)]
pub(crate) struct Staged {
    // Field order is drop order: the filesystem before the device under it.
    fs: Option<LoopFs>,
    served: Served,
    fs_dir: PathBuf,
}

impl Staged {
    /// A fresh device under `dir`: DIR/emu mounted over FUSE, ext4 at DIR/fs.
    pub(crate) fn create(device: &EmuDevice, dir: &Path) -> Result<Staged, PeerError> {
        let emu_dir = dir.join("emu");
        let fs_dir = dir.join("fs");
        std::fs::create_dir_all(&emu_dir).map_err(|e| PeerError::io(&emu_dir, e))?;
        let ssd = Ssd::new(device.config.clone()).map_err(|e| PeerError::Config(e.to_string()))?;
        let served = serve(ssd, &device.name, &emu_dir).map_err(emu_error)?;
        let fs = LoopFs::create(&served.device_path(), &fs_dir).map_err(emu_error)?;
        Ok(Staged { fs: Some(fs), served, fs_dir })
    }

    /// Where the engine's directory goes.
    pub(crate) fn engine_dir(&self) -> PathBuf {
        self.fs_dir.join("db")
    }

    /// The device's counters once everything the filesystem holds dirty has reached it.
    pub(crate) fn counters(&self) -> Result<Counters, PeerError> {
        if let Some(fs) = &self.fs {
            fs.sync().map_err(emu_error)?;
        }
        self.served.counters().map_err(emu_error)
    }

    /// Writes a filler file until `fill` of the filesystem's blocks are in use (nothing when
    /// they already are). Returns the filler's bytes.
    pub(crate) fn fill_to(&self, fill: f64) -> Result<u64, PeerError> {
        let (total, used) = usage(&self.fs_dir)?;
        let target = (total as f64 * fill) as u64;
        let want = target.saturating_sub(used);
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

    /// Unmounts the filesystem, detaches the loop device and unmounts the device.
    pub(crate) fn destroy(mut self) -> Result<(), PeerError> {
        if let Some(fs) = self.fs.take() {
            fs.destroy().map_err(emu_error)?;
        }
        let mut last = None;
        for _ in 0..UNMOUNT_ATTEMPTS {
            match self.served.unmount() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(emu_error(last.map_or_else(|| "unmount".to_string(), |e| e.to_string())))
    }
}

fn emu_error(e: impl std::fmt::Display) -> PeerError {
    PeerError::Config(format!("emulated SSD: {e}"))
}

/// (total, used) bytes of the filesystem holding `dir`, as `df` counts them.
fn usage(dir: &Path) -> Result<(u64, u64), PeerError> {
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
    Ok((st.f_blocks * block, (st.f_blocks - st.f_bfree) * block))
}
