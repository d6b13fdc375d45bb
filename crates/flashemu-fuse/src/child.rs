//! The server in a child process: a program that mounts the device (`wafer emu serve`) is
//! started with the device's configuration in a file, signals readiness by writing a file once
//! the mount is up, and leaves its final counters in another when it exits. A process that
//! uses the mount (a database, a loop device's filesystem) may then abort or hang without
//! taking the server with it, and the server may be killed without taking the user with it:
//! when the server process ends, the kernel aborts its FUSE connection, and every request
//! still waiting on the mount fails instead of blocking for ever.
//!
//! ```text
//!  DIR/device.toml --> PROGRAM ARGS.. --config DIR/device.toml --mount DIR/emu
//!                                     --ready-file DIR/ready --stats-out DIR/final-stats.json
//!  DIR/ready        <-- written (the device file's path) once DIR/emu/ssd is served
//!  DIR/final-stats.json <-- the counters at exit (SIGTERM: unmount, write, exit 0)
//!  DIR/server.log   <-- the server's stderr
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use flashemu::Config;

use crate::serve::{DEVICE_FILE, STATS_FILE};
use crate::stats::Stats;

/// How often a wait polls the child (the waits are bounded by their timeouts, not by this).
const POLL: Duration = Duration::from_millis(20);
/// Lines of the server's log quoted in an error.
const LOG_TAIL_LINES: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("starting the server `{program}`: {reason}")]
    Spawn { program: String, reason: String },
    #[error("the server exited ({status}) before it was ready: {log}")]
    ExitedEarly { status: String, log: String },
    #[error("the server was not ready after {timeout_s} s (killed): {log}")]
    NotReady { timeout_s: u64, log: String },
    #[error("the server did not leave its final counters ({status}): {log}")]
    NoStats { status: String, log: String },
}

/// The files of one child server, all under one directory.
#[derive(Debug, Clone)]
struct Files {
    config: PathBuf,
    mountpoint: PathBuf,
    ready: PathBuf,
    stats_out: PathBuf,
    log: PathBuf,
}

impl Files {
    fn under(dir: &Path) -> Files {
        Files {
            config: dir.join("device.toml"),
            mountpoint: dir.join("emu"),
            ready: dir.join("ready"),
            stats_out: dir.join("final-stats.json"),
            log: dir.join("server.log"),
        }
    }
}

/// A device served by a child process; killed (and its mount detached) on drop unless
/// stopped.
#[derive(Debug)]
pub struct ServerChild {
    child: Option<Child>,
    files: Files,
}

fn io_error(path: &Path, e: std::io::Error) -> ChildError {
    ChildError::Io { path: path.to_path_buf(), reason: e.to_string() }
}

impl ServerChild {
    /// Starts `program` with `args` and the protocol's flags to serve `config` under `dir`
    /// (created if needed; `dir/emu` must be absent or empty), and waits until it is ready,
    /// it exits, or `ready_timeout` passes (then it is killed).
    pub fn spawn(
        program: &Path,
        args: &[&str],
        config: &Config,
        dir: &Path,
        ready_timeout: Duration,
    ) -> Result<ServerChild, ChildError> {
        let files = Files::under(dir);
        std::fs::create_dir_all(&files.mountpoint).map_err(|e| io_error(&files.mountpoint, e))?;
        let toml = config
            .to_toml()
            .map_err(|e| ChildError::Io { path: files.config.clone(), reason: e.to_string() })?;
        std::fs::write(&files.config, toml).map_err(|e| io_error(&files.config, e))?;
        for stale in [&files.ready, &files.stats_out] {
            match std::fs::remove_file(stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_error(stale, e))
                }
                _ => {}
            }
        }
        let log = std::fs::File::create(&files.log).map_err(|e| io_error(&files.log, e))?;
        let mut command = Command::new(program);
        command.args(args);
        command.arg("--config").arg(&files.config);
        command.arg("--mount").arg(&files.mountpoint);
        command.arg("--ready-file").arg(&files.ready);
        command.arg("--stats-out").arg(&files.stats_out);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        let child = command.spawn().map_err(|e| ChildError::Spawn {
            program: program.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut server = ServerChild { child: Some(child), files };
        server.wait_ready(ready_timeout)?;
        Ok(server)
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), ChildError> {
        let start = Instant::now();
        loop {
            if self.files.ready.exists() {
                return Ok(());
            }
            if let Some(status) = self.try_wait() {
                return Err(ChildError::ExitedEarly {
                    status: describe(status),
                    log: log_tail(&self.files.log),
                });
            }
            if start.elapsed() >= timeout {
                self.kill();
                return Err(ChildError::NotReady {
                    timeout_s: timeout.as_secs(),
                    log: log_tail(&self.files.log),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// `DIR/emu/ssd`: what a loop device or a program opens.
    pub fn device_path(&self) -> PathBuf {
        self.files.mountpoint.join(DEVICE_FILE)
    }

    /// `DIR/emu/stats`: the counters while the server runs.
    pub fn stats_path(&self) -> PathBuf {
        self.files.mountpoint.join(STATS_FILE)
    }

    pub fn log_path(&self) -> &Path {
        &self.files.log
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn try_wait(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(status)
            }
            // An error here means the child is gone from our view; treat it as still running
            // and let the caller's timeout end the wait.
            Ok(None) | Err(_) => None,
        }
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(child) = &self.child {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) on our own child's pid (not yet reaped, so not reused).
                unsafe { libc::kill(pid, signal) };
            }
        }
    }

    /// Waits up to `timeout` for the child to exit.
    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if self.child.is_none() || start.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Stops the server and returns its final counters: SIGTERM (it unmounts, writes them and
    /// exits); after `timeout` a second SIGTERM (it detaches the mount lazily); after another,
    /// SIGKILL. Whatever happened, the mount is detached before this returns. The caller
    /// takes the filesystem on the device off first, or the first unmount is refused.
    pub fn stop(mut self, timeout: Duration) -> Result<Stats, ChildError> {
        let mut status = None;
        for signal in [libc::SIGTERM, libc::SIGTERM, libc::SIGKILL] {
            if self.child.is_none() {
                break;
            }
            self.signal(signal);
            status = self.wait_exit(timeout);
        }
        detach(&self.files.mountpoint);
        let status_text = status.map_or_else(|| "still running after SIGKILL".into(), describe);
        let text =
            std::fs::read_to_string(&self.files.stats_out).map_err(|e| ChildError::NoStats {
                status: status_text.clone(),
                log: format!("{e}; {}", log_tail(&self.files.log)),
            })?;
        Stats::from_json(&text)
            .map_err(|e| ChildError::NoStats { status: status_text, log: e.to_string() })
    }

    /// Kills the server now (SIGKILL) and detaches its mount: every request still waiting on
    /// it fails. For when whatever uses the device is stuck on it.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        // SIGKILL cannot be refused; the wait is for the kernel to end the process.
        self.wait_exit(Duration::from_secs(10));
        detach(&self.files.mountpoint);
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill();
        }
    }
}

/// Detaches whatever is mounted at `path` (MNT_DETACH: also a mount whose server is gone);
/// nothing when nothing is.
fn detach(path: &Path) {
    if let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) {
        // SAFETY: a valid NUL-terminated path; umount2 reads it and touches no other memory.
        // EINVAL (not a mount point) is the expected outcome after a clean exit.
        unsafe { libc::umount2(c_path.as_ptr(), libc::MNT_DETACH) };
    }
}

/// `exit status 0`, or the signal's name for a process killed by one.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("killed by signal {signal} ({})", signal_name(signal)),
        None => status.to_string(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGABRT => "SIGABRT: the program aborted",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "other",
    }
}

/// The last lines of a log file, joined with ` | ` (or why it cannot be read).
pub fn log_tail(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            if tail.is_empty() {
                format!("{} is empty", path.display())
            } else {
                tail.join(" | ")
            }
        }
        Err(e) => format!("{}: {e}", path.display()),
    }
}
