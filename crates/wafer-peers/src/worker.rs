//! Each engine in a process of its own (`wafer bench peers-worker`), so that an engine that
//! aborts (a library's failed assertion) or hangs becomes an error in its rows, not the end of
//! the run: the harness sends the job as JSON on the worker's stdin and reads one JSON message
//! a line from its stdout (each row as it is measured, then the engine's settings or why it
//! failed). The worker and whatever it starts (PostgreSQL's server) are one process group,
//! killed together when the engine overruns its time.
//!
//! ```text
//!  harness --job (stdin)--> worker: open, load, phases --{"row":..}\n..{"settings":..}--> harness
//!          <-- exit status, DIR/worker.log (stderr) quoted when it dies
//! ```

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::config::PeersConfig;
use super::emu_device::{EmuView, Staged};
use super::engine::EngineKind;
use super::error::PeerError;
use super::phases;
use super::raw::RawJob;
use super::report::Row;
use wafer_harness::progress::Silent;

pub use super::fault::WorkerFault;

/// How long a worker may take to exit once its output has ended, and to die once killed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(20);

/// What one worker runs: one engine on one device, with the harness's configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkerJob {
    pub config: PeersConfig,
    pub engine: EngineKind,
    pub device: String,
    pub round: u32,
    /// The engine's directory (fresh, empty).
    pub dir: PathBuf,
    /// The emulated SSD the directory is on.
    pub(crate) emu: Option<EmuView>,
    /// A raw row: the served files the engine opens instead of a directory.
    #[serde(default)]
    pub raw: Option<RawJob>,
}

/// One line of a worker's output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Message {
    // Boxed: a row with its breakdown is several times the other messages.
    Row(Box<Row>),
    Settings(serde_json::Value),
    /// The engine failed with an error it returned; `missing` when its library is absent.
    Failed {
        message: String,
        missing: Option<[String; 3]>,
    },
}

impl WorkerJob {
    pub(crate) fn new(
        config: &PeersConfig,
        engine: EngineKind,
        device: &str,
        round: u32,
        dir: &Path,
        emu: Option<EmuView>,
    ) -> WorkerJob {
        WorkerJob {
            config: config.clone(),
            engine,
            device: device.into(),
            round,
            dir: dir.to_path_buf(),
            emu,
            raw: None,
        }
    }
}

/// The worker's side: reads a job from `input`, runs it, writes messages to `out`. The error
/// it returns has also been written as a `failed` message.
pub fn serve_worker(input: impl std::io::Read, mut out: impl Write) -> Result<(), PeerError> {
    let mut emit = |m: &Message| -> Result<(), PeerError> {
        let line = serde_json::to_string(m).map_err(|e| PeerError::Config(e.to_string()))?;
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| PeerError::Config(e.to_string()))
    };
    let outcome = run_job(input, &mut |row| emit(&Message::Row(Box::new(row.clone()))));
    let message = match &outcome {
        Ok(settings) => Message::Settings(settings.clone()),
        Err(PeerError::Missing { library, package, reason }) => Message::Failed {
            message: outcome.as_ref().err().map(|e| e.to_string()).unwrap_or_default(),
            missing: Some([library.clone(), package.clone(), reason.clone()]),
        },
        Err(e) => Message::Failed { message: e.to_string(), missing: None },
    };
    emit(&message)?;
    outcome.map(|_| ())
}

fn run_job(
    input: impl std::io::Read,
    emit: &mut dyn FnMut(&Row) -> Result<(), PeerError>,
) -> Result<serde_json::Value, PeerError> {
    let job: WorkerJob = serde_json::from_reader(input)
        .map_err(|e| PeerError::Config(format!("worker job: {e}")))?;
    let config = &job.config;
    let name = job.raw.as_ref().map_or(job.engine.name(), |r| r.row.name.as_str());
    let at = phases::Placement { device: &job.device, engine: job.engine, name, round: job.round };
    let mut setup = config.setup(job.dir.clone());
    setup.raw = job.raw.clone();
    let (mut emitted, mut rows) = (Ok(()), 0u32);
    let settings =
        phases::run_engine(config, &at, &setup, job.emu.as_ref(), &mut Silent, &mut |row| {
            if emitted.is_ok() {
                emitted = emit(row);
            }
            rows += 1;
            if let Some(fault) = &config.fault {
                fault.strike(rows);
            }
        })?;
    emitted.map(|()| settings)
}

/// The harness's side: runs `job` in `exe bench peers-worker`, hands each row to `on_row`,
/// and returns the engine's settings, or why it failed: its own error, the signal that killed
/// it (with its log's last lines), or `timeout` passing without a row (then it is killed, and
/// if it is stuck on the emulated SSD the server is killed under it so it can exit).
pub(crate) fn run_isolated(
    exe: &Path,
    job: &WorkerJob,
    timeout: Duration,
    log: &Path,
    staged: Option<&mut Staged>,
    on_row: &mut dyn FnMut(&Row),
) -> Result<serde_json::Value, PeerError> {
    let mut child = spawn(exe, job, log)?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let Some(stdout) = stdout else { return };
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str::<Message>(&line).map_err(|e| (e, line))).is_err() {
                break;
            }
        }
    });
    let timeout = timeout.min(Duration::from_secs(u32::MAX.into()));
    let mut deadline = Instant::now() + timeout;
    let (mut last_phase, mut outcome, mut timed_out) = (None::<String>, None, false);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(Message::Row(row))) => {
                // Each phase gets the whole timeout.
                deadline = Instant::now() + timeout;
                last_phase = Some(format!("{} {}", row.phase, row.distribution));
                on_row(&row);
            }
            Ok(Ok(Message::Settings(s))) => outcome = Some(Ok(s)),
            Ok(Ok(Message::Failed { message, missing })) => {
                outcome = Some(Err(failed_message(job, message, missing)))
            }
            Ok(Err((e, line))) => eprintln!("peers-worker: unreadable line ({e}): {line}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = finish(&mut child, timed_out, staged);
    // The reader ends with the worker's stdout (the worker is gone or killed by now).
    let _ = reader.join();
    match (outcome, timed_out) {
        (Some(Ok(settings)), false) if status.as_ref().is_some_and(|s| s.success()) => Ok(settings),
        (Some(Err(e)), false) => Err(e),
        (_, timed_out) => {
            let after = last_phase.map_or_else(|| "open or load".into(), |p| format!("after {p}"));
            let how = if timed_out {
                format!("no phase ended within {} s: killed", timeout.as_secs())
            } else {
                status.map_or_else(
                    || "did not exit when killed".into(),
                    flashemu_fuse::child::describe,
                )
            };
            Err(PeerError::Run {
                engine: job.engine.name().to_string(),
                phase: after,
                message: format!(
                    "the engine's process ended without a result ({how}); its log: {}{}",
                    flashemu_fuse::child::log_tail(log),
                    free_space_note(log)
                ),
            })
        }
    }
}

/// What was free on the filesystem holding the worker's log (and the host directories of its
/// run): an engine that meets a full disk may abort without a word, its log unwritable too.
fn free_space_note(log: &Path) -> String {
    let dir = log.parent().unwrap_or(log);
    match super::emu_device::fs_space(dir) {
        Ok(space) => format!(
            " ({} MiB free then on the filesystem holding {})",
            space.avail_bytes >> 20,
            dir.display()
        ),
        Err(e) => format!(" (free space unknown: {e})"),
    }
}

fn spawn(exe: &Path, job: &WorkerJob, log: &Path) -> Result<Child, PeerError> {
    use std::os::unix::process::CommandExt;
    let log_file = std::fs::File::create(log).map_err(|e| PeerError::io(log, e))?;
    let mut child = Command::new(exe)
        .args(["bench", "peers-worker"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log_file)
        // Its own process group: the engine's helpers (a PostgreSQL server) die with it.
        .process_group(0)
        .spawn()
        .map_err(|e| PeerError::io(exe, e))?;
    let text = serde_json::to_vec(job).map_err(|e| PeerError::Config(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A worker that died at once shows up below as its exit status.
        let _ = stdin.write_all(&text);
    }
    Ok(child)
}

/// Waits for the worker to exit (killing its group first when it overran, or when it does not
/// exit by itself); kills the emulated SSD's server under it if even that does not end it.
fn finish(
    child: &mut Child,
    kill_now: bool,
    staged: Option<&mut Staged>,
) -> Option<std::process::ExitStatus> {
    let group = libc::pid_t::try_from(child.id()).ok();
    let kill_group = || {
        if let Some(pgid) = group {
            // SAFETY: kill(2) of the process group this harness created for the worker.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    };
    if kill_now {
        kill_group();
    }
    let mut status = wait(child, EXIT_TIMEOUT);
    if status.is_none() {
        kill_group();
        status = wait(child, EXIT_TIMEOUT);
    }
    if status.is_none() {
        // Stuck in the kernel on the device: ending the server fails its pending requests.
        if let Some(staged) = staged {
            staged.kill_server();
        }
        status = wait(child, EXIT_TIMEOUT);
    }
    // Whatever the worker left running in its group goes with it.
    kill_group();
    status
}

fn wait(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(POLL),
            _ => return None,
        }
    }
}

fn failed_message(job: &WorkerJob, message: String, missing: Option<[String; 3]>) -> PeerError {
    match missing {
        Some([library, package, reason]) => PeerError::Missing { library, package, reason },
        // The worker's error already names the engine and phase.
        None => {
            let _ = job;
            PeerError::Config(message)
        }
    }
}
