//! Mounting: checks that FUSE can work here (a clear error where it cannot), mounts the
//! filesystem with its request loop on background threads, and unmounts cleanly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flashemu::{Counters, Ssd};
use fuser::{BackgroundSession, MountOption, SessionACL};

use crate::blockfile::BlockFile;
use crate::fs::EmuFs;
use crate::stats::Stats;

/// The device file's name in the mount.
pub const DEVICE_FILE: &str = "ssd";
/// The counters file's name in the mount.
pub const STATS_FILE: &str = "stats";
const FUSE_DEVICE: &str = "/dev/fuse";
/// Request threads: two, so a stats read is answered while a long write waits on the lock.
const REQUEST_THREADS: usize = 2;

/// umount(2) attempts while the mount is busy, and the pause between them (1 s in all).
const UNMOUNT_BUSY_RETRIES: u32 = 20;
const UNMOUNT_BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "FUSE is not available here: {reason}. Serving the emulator needs the fuse kernel \
         module (/dev/fuse; in a container: --device /dev/fuse --cap-add SYS_ADMIN) and root, \
         or fusermount3 (Debian package fuse3) for other users"
    )]
    FuseUnavailable { reason: String },
    #[error("{path}: {reason}")]
    MountPoint { path: PathBuf, reason: String },
    #[error(
        "{path} is busy ({reason}): something still uses the device file (a loop device: \
         `losetup -j {path}/ssd` then `losetup -d`; a filesystem on it: umount it first)"
    )]
    Busy { path: PathBuf, reason: String },
    #[error("unmounting {path}: {reason}")]
    Unmount { path: PathBuf, reason: String },
}

/// Why FUSE cannot be used here, or None when it can be tried.
pub fn fuse_unavailable() -> Option<String> {
    match std::fs::OpenOptions::new().read(true).write(true).open(FUSE_DEVICE) {
        Ok(_) => None,
        Err(e) => Some(format!("{FUSE_DEVICE}: {e}")),
    }
}

/// A mounted device; unmounted on drop (best effort) or by [`Served::unmount`].
#[derive(Debug)]
pub struct Served {
    session: Option<BackgroundSession>,
    device: Arc<BlockFile>,
    mountpoint: PathBuf,
    label: String,
}

/// Mounts `ssd` at `mountpoint` (an existing empty directory) as `ssd` and `stats`.
/// `label` says what the device is (shown in the stats).
pub fn serve(ssd: Ssd, label: &str, mountpoint: &Path) -> Result<Served, ServeError> {
    if let Some(reason) = fuse_unavailable() {
        return Err(ServeError::FuseUnavailable { reason });
    }
    let bad = |reason: String| ServeError::MountPoint { path: mountpoint.to_path_buf(), reason };
    let mut entries = std::fs::read_dir(mountpoint).map_err(|e| bad(e.to_string()))?;
    if entries.next().is_some() {
        return Err(bad("not empty (the mount would hide its files)".into()));
    }
    let device = Arc::new(BlockFile::new(ssd));
    let fs = EmuFs::new(Arc::clone(&device), label.to_string());
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        MountOption::FSName("flashemu".into()),
        MountOption::Subtype("flashemu".into()),
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
    ];
    // Other users reach the files only through a loop device or root's processes: the kernel's
    // loop worker and root pass the owner check.
    config.acl = SessionACL::Owner;
    config.n_threads = Some(REQUEST_THREADS);
    let session = fuser::spawn_mount(fs, mountpoint, &config).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EPERM)
        {
            ServeError::FuseUnavailable { reason: format!("mount refused: {e}") }
        } else {
            bad(format!("mount failed: {e}"))
        }
    })?;
    Ok(Served {
        session: Some(session),
        device,
        mountpoint: mountpoint.to_path_buf(),
        label: label.to_string(),
    })
}

impl Served {
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// `MOUNT/ssd`: what a loop device or a program opens.
    pub fn device_path(&self) -> PathBuf {
        self.mountpoint.join(DEVICE_FILE)
    }

    pub fn stats_path(&self) -> PathBuf {
        self.mountpoint.join(STATS_FILE)
    }

    /// The device's counters now (without going through the mount).
    pub fn counters(&self) -> Result<Counters, crate::BlockFileError> {
        self.device.counters()
    }

    pub fn stats(&self) -> Result<Stats, crate::BlockFileError> {
        Stats::of_device(&self.label, &self.device)
    }

    /// The device itself, e.g. for its timing report.
    pub fn device(&self) -> &BlockFile {
        &self.device
    }

    /// Unmounts and waits for the request threads. Refused while the device file is in use
    /// (a loop device over it): the mount stays and the error says what holds it.
    pub fn unmount(&mut self) -> Result<(), ServeError> {
        let Some(session) = self.session.take() else { return Ok(()) };
        let path = self.mountpoint.clone();
        // A plain umount(2) first: it fails with EBUSY, instead of detaching lazily, while a
        // loop device holds the file, so the user is told rather than left with a dead device.
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| ServeError::Unmount { path: path.clone(), reason: e.to_string() })?;
        // A transient holder (a reader that just closed the file, whose release the kernel
        // finishes asynchronously, or a process scanning the directory) makes umount(2) fail
        // with EBUSY for a moment: retried a bounded number of times before it is reported.
        let mut rc = -1;
        for attempt in 0..UNMOUNT_BUSY_RETRIES {
            // SAFETY: a valid NUL-terminated path; umount2 reads it and touches no other memory.
            rc = unsafe { libc::umount2(c_path.as_ptr(), 0) };
            let busy =
                rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY);
            if !busy || attempt + 1 == UNMOUNT_BUSY_RETRIES {
                break;
            }
            std::thread::sleep(UNMOUNT_BUSY_PAUSE);
        }
        let joined = if rc == 0 {
            // Unmounted: the request threads see the connection end and return.
            session.join()
        } else {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EBUSY) {
                self.session = Some(session);
                return Err(ServeError::Busy { path, reason: err.to_string() });
            }
            // Not root (EPERM): fuser's own path goes through fusermount3.
            session.umount_and_join()
        };
        joined.map_err(|e| ServeError::Unmount { path, reason: e.to_string() })
    }

    /// Detaches the mount lazily (MNT_DETACH) whatever still uses it, and lets the request
    /// threads go without waiting for them (a loop device may hold the file open for ever):
    /// for a second interrupt, when the user chose to stop anyway. What still uses the file
    /// gets I/O errors once this process exits.
    pub fn force_unmount(&mut self) {
        if let Ok(c_path) = std::ffi::CString::new(self.mountpoint.as_os_str().as_encoded_bytes()) {
            // SAFETY: as in `unmount`.
            unsafe { libc::umount2(c_path.as_ptr(), libc::MNT_DETACH) };
        }
        drop(self.session.take());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.session.is_some() && self.unmount().is_err() {
            self.force_unmount();
        }
    }
}
