//! A real filesystem on the served device: a loop device over `MOUNT/ssd`, ext4 made on it and
//! mounted with `-o discard`, so that every freed extent reaches the emulator as TRIM (the loop
//! driver turns discard into a hole punch on its file). Torn down in reverse on drop.
//!
//! Uses the system's tools (util-linux `losetup`, `mount`, `umount`; e2fsprogs `mkfs.ext4`),
//! as an administrator would; each failure says which step and what it printed.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum LoopFsError {
    #[error(
        "loop devices are not available here: {reason}. A filesystem on the emulated SSD needs \
         root and the loop driver (/dev/loop-control; in a container: --privileged or \
         --device /dev/loop-control --device /dev/loopN)"
    )]
    LoopUnavailable { reason: String },
    #[error("`{command}` could not run ({reason}); install the Debian package {package}")]
    MissingTool { command: String, package: &'static str, reason: String },
    #[error("`{command}` failed: {output}")]
    Failed { command: String, output: String },
}

/// ext4 on a loop device over a file, mounted with discard.
#[derive(Debug)]
pub struct LoopFs {
    loop_device: Option<String>,
    mountpoint: PathBuf,
    mounted: bool,
}

/// Why a loop device cannot be set up here, or None when it can be tried.
pub fn loop_unavailable() -> Option<String> {
    const CONTROL: &str = "/dev/loop-control";
    match std::fs::OpenOptions::new().read(true).write(true).open(CONTROL) {
        Ok(_) => None,
        Err(e) => Some(format!("{CONTROL}: {e}")),
    }
}

fn run(program: &str, args: &[&str], package: &'static str) -> Result<String, LoopFsError> {
    let command = format!("{program} {}", args.join(" "));
    let output = Command::new(program).args(args).output().map_err(|e| {
        LoopFsError::MissingTool { command: command.clone(), package, reason: e.to_string() }
    })?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).trim().to_string();
        if text.is_empty() {
            text = format!("exit status {}", output.status);
        }
        return Err(LoopFsError::Failed { command, output: text });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

impl LoopFs {
    /// Attaches `image` to a free loop device, makes ext4 on it (the whole device discarded
    /// first, as mkfs does on an SSD; inode tables and journal written now, not lazily during
    /// the run) and mounts it at `mountpoint` with `-o discard`.
    pub fn create(image: &Path, mountpoint: &Path) -> Result<LoopFs, LoopFsError> {
        if let Some(reason) = loop_unavailable() {
            return Err(LoopFsError::LoopUnavailable { reason });
        }
        let device =
            run("losetup", &["--find", "--show", "--direct-io=off", &text(image)], "mount")?;
        let mut fs = LoopFs {
            loop_device: Some(device.clone()),
            mountpoint: mountpoint.into(),
            mounted: false,
        };
        run(
            "mkfs.ext4",
            // 4 KiB blocks whatever the size (a small device would get 1 KiB ones, whose
            // writes are not whole LBAs), no blocks reserved for root (every engine, root's
            // or a server user's, gets the same space).
            &[
                "-q",
                "-F",
                "-b",
                "4096",
                "-T",
                "default",
                "-m",
                "0",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                &device,
            ],
            "e2fsprogs",
        )?;
        std::fs::create_dir_all(mountpoint).map_err(|e| LoopFsError::Failed {
            command: format!("mkdir {}", text(mountpoint)),
            output: e.to_string(),
        })?;
        run("mount", &["-t", "ext4", "-o", "discard", &device, &text(mountpoint)], "mount")?;
        fs.mounted = true;
        Ok(fs)
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    pub fn loop_device(&self) -> Option<&str> {
        self.loop_device.as_deref()
    }

    /// Writes back everything the filesystem holds dirty (`syncfs`), so the device's counters
    /// include it.
    pub fn sync(&self) -> Result<(), LoopFsError> {
        let dir = std::fs::File::open(&self.mountpoint).map_err(|e| LoopFsError::Failed {
            command: format!("open {}", text(&self.mountpoint)),
            output: e.to_string(),
        })?;
        dir.sync_all().map_err(|e| LoopFsError::Failed {
            command: format!("fsync {}", text(&self.mountpoint)),
            output: e.to_string(),
        })?;
        run("sync", &["-f", &text(&self.mountpoint)], "coreutils").map(|_| ())
    }

    /// Unmounts (lazily when something still uses the filesystem) and detaches the loop
    /// device (a busy one detaches itself when its last user lets go).
    pub fn destroy(mut self) -> Result<(), LoopFsError> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), LoopFsError> {
        if self.mounted {
            if let Err(e) = run("umount", &[&text(&self.mountpoint)], "mount") {
                // Still in use (a process that died mid-write, a file left open): detach it
                // lazily, so the loop device lets go once the last user does.
                run("umount", &["-l", &text(&self.mountpoint)], "mount").map_err(|_| e)?;
            }
            self.mounted = false;
        }
        if let Some(device) = self.loop_device.take() {
            if let Err(e) = run("losetup", &["-d", &device], "mount") {
                self.loop_device = Some(device);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
