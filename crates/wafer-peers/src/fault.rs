//! A failure a worker stages on purpose: a leaf, so the configuration the harness sends names
//! it without naming the worker that strikes it.
use std::time::Duration;

/// A failure a worker stages on purpose, for tests of the harness: after this many rows
/// (files open, writes in flight) it aborts as a library's failed assertion does, or stops
/// making progress as a deadlocked one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerFault {
    AbortAfterRows(u32),
    HangAfterRows(u32),
}

impl WorkerFault {
    pub(crate) fn strike(&self, rows: u32) {
        match *self {
            WorkerFault::AbortAfterRows(n) if rows >= n => {
                eprintln!("peers-worker: aborting after {rows} rows, as the job asked");
                std::process::abort();
            }
            WorkerFault::HangAfterRows(n) if rows >= n => {
                eprintln!("peers-worker: hanging after {rows} rows, as the job asked");
                // Until killed (a day at most).
                for _ in 0..86_400 {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            _ => {}
        }
    }
}
