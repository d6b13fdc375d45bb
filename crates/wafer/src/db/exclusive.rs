//! One writer per database: `Db::open(path)` holds an exclusive advisory lock (`flock`) on its
//! data file and its WAL for the life of the `Db`, taken before either is read or written.
//!
//! Why the files themselves and no lock file beside them: the lock then goes wherever the
//! database goes (a copy, a rename), and a crashed holder's lock is gone with its process, so
//! there is nothing stale to clean up. The lock is per open file, so a second `Db::open` in the
//! same process is refused like one from another process.
//!
//! Creation makes each file under a temporary name, locks it, and links it into place
//! (`link(2)` refuses an existing name): a file appears under its name already locked. Of two
//! opens that race to create one database, exactly one links it and the other finds the file,
//! and its lock, on its next round. The data file is always locked before the WAL is looked
//! at, so a reader never mistakes a creation in progress for a half-deleted database.
//!
//! `Db::open_on*` take devices the caller opened and owns; they take no lock.
use crate::error::OpenError;
use crate::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::path::Path;

/// Rounds of "look, then create" before giving up: each lost race means another open created
/// the files in between, so the next round finds them (and their lock) unless they vanish again.
const ACQUIRE_ROUNDS_MAX: u32 = 4;

/// The locked handles; dropping them (with the `Db`'s last handle) releases the locks.
#[derive(Debug)]
pub(super) struct FileLocks {
    _data: File,
    _wal: Option<File>,
}

impl Acquired {
    /// Removes files this acquire created, when the open that created them failed: an empty
    /// pair would otherwise be refused by every later open as a truncated database.
    pub fn remove_if_created(self, path: &Path, wal_path: &Path) {
        // The two names `acquire` locked, as `wal_path()` derives them: never one file.
        debug_assert_ne!(path, wal_path, "a database whose WAL is its own data file");
        if self.created {
            // Best effort: the open's own error is the one to report. Removed while still
            // locked, so no other open takes them in between.
            let _ = std::fs::remove_file(wal_path);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What `acquire` found: the locks, and whether the files were created by it (empty, to be
/// sized by the open).
#[derive(Debug)]
pub(super) struct Acquired {
    pub locks: FileLocks,
    pub created: bool,
}

/// Locks the database at `path` (and its WAL at `wal_path`), creating both when neither exists
/// and `create_allowed`. Returns `None` when the data file is absent and may not be created:
/// the open's own checks then say why. Refuses with [`OpenError::Locked`] when another open
/// holds either file.
pub(super) fn acquire(
    path: &Path,
    wal_path: &Path,
    create_allowed: bool,
) -> Result<Option<Acquired>> {
    // Two locks on one file from one open would refuse the open as locked by itself.
    debug_assert_ne!(path, wal_path, "a database whose WAL is its own data file");
    for _ in 0..ACQUIRE_ROUNDS_MAX {
        if let Some(data) = open_existing(path)? {
            lock(&data, path)?;
            let wal = open_existing(wal_path)?;
            if let Some(w) = &wal {
                lock(w, wal_path)?;
            }
            let locks = FileLocks { _data: data, _wal: wal };
            return Ok(Some(Acquired { locks, created: false }));
        }
        if !create_allowed || wal_path.exists() {
            return Ok(None);
        }
        let Some(data) = create_locked(path)? else { continue };
        // The data file is ours and locked: a WAL appearing now was not created by a Wafer
        // open (which creates the data file first). The empty data file goes again, and the
        // open's checks refuse the log alone.
        let Some(wal) = create_locked(wal_path)? else {
            std::fs::remove_file(path).map_err(|e| io_error("remove", e))?;
            return Ok(None);
        };
        let locks = FileLocks { _data: data, _wal: Some(wal) };
        return Ok(Some(Acquired { locks, created: true }));
    }
    Err(Error::Open(OpenError::Locked { path: path.to_path_buf() }))
}

/// Locks an existing database's files shared, for a read-only open: any number of these may
/// hold them together, never beside a writer. Refuses with [`OpenError::Locked`] while a
/// writer holds either file; `None` when the data file does not exist.
pub(super) fn acquire_shared(path: &Path, wal_path: &Path) -> Result<Option<FileLocks>> {
    // The WAL is `wal_path(path)`: a distinct file, each locked once.
    debug_assert_ne!(path, wal_path, "a database whose WAL is its own data file");
    let open = |p: &Path| match File::open(p) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io_error("open to lock", source)),
    };
    let Some(data) = open(path)? else { return Ok(None) };
    lock_shared(&data, path)?;
    let wal = open(wal_path)?;
    if let Some(w) = &wal {
        lock_shared(w, wal_path)?;
    }
    Ok(Some(FileLocks { _data: data, _wal: wal }))
}

fn open_existing(path: &Path) -> Result<Option<File>> {
    // An empty path would open the working directory's entry, never a database file.
    debug_assert!(!path.as_os_str().is_empty(), "lock of an unnamed file");
    match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io_error("open to lock", source)),
    }
}

/// Creates `path` locked, or returns `None` when the name exists (another open made it).
fn create_locked(path: &Path) -> Result<Option<File>> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".creating-{}-{}", std::process::id(), creation_counter()));
    let temp = std::path::PathBuf::from(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| io_error("create", e))?;
    let linked = lock(&file, &temp).map(|()| match std::fs::hard_link(&temp, path) {
        Ok(()) => Some(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Some(false),
        // A filesystem without hard links (FAT, some network ones): `None`, below.
        Err(_) => None,
    });
    // The temporary name goes either way; the file lives on under `path` when linked.
    let removed = std::fs::remove_file(&temp).map_err(|e| io_error("remove", e));
    let out = match (linked?, removed) {
        (Some(true), Ok(())) => Ok(Some(file)),
        (Some(false), Ok(())) => Ok(None),
        (None, Ok(())) => create_then_lock(path),
        (_, Err(e)) => Err(e),
    };
    debug_assert!(created_empty(&out), "a created data file handed over with bytes in it");
    out
}

/// Open formats what creation hands it: a file nobody has written a byte to (an open that
/// finds it first fails to lock it and writes nothing). Checked in debug builds only.
fn created_empty(out: &Result<Option<File>>) -> bool {
    match out {
        Ok(Some(file)) => {
            let meta = file.metadata();
            // A created database file is a regular file, never a directory or a device.
            debug_assert!(meta.as_ref().is_ok_and(|m| m.is_file()), "{meta:?}");
            meta.is_ok_and(|m| m.len() == 0)
        }
        _ => true,
    }
}

/// Creation where links are refused: the file is created, then locked. Another open may find
/// it between the two and lock it first; this one then removes the empty file it made and
/// reports `Locked`, and that one, finding no WAL beside it, refuses. Neither writes a byte.
fn create_then_lock(path: &Path) -> Result<Option<File>> {
    match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
        Ok(file) => match lock(&file, path) {
            Ok(()) => {
                let out = Ok(Some(file));
                debug_assert!(created_empty(&out), "a created data file with bytes in it");
                out
            }
            Err(e) => {
                let _ = std::fs::remove_file(path);
                Err(e)
            }
        },
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(io_error("create", e)),
    }
}

/// Tells apart the temporary names of opens in one process.
fn creation_counter() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A wrapped counter would hand two opens the same temporary name.
    debug_assert!(n < u64::MAX, "creation counter wrapped");
    n
}

fn lock(file: &File, path: &Path) -> Result<()> {
    // `flock` of a directory succeeds and protects nothing: only files are locked.
    debug_assert!(file.metadata().is_ok_and(|m| m.is_file()), "lock of {}", path.display());
    locked(file.try_lock(), path)
}

fn lock_shared(file: &File, path: &Path) -> Result<()> {
    // `flock` of a directory succeeds and protects nothing: only files are locked.
    debug_assert!(file.metadata().is_ok_and(|m| m.is_file()), "lock of {}", path.display());
    locked(file.try_lock_shared(), path)
}

/// A lock attempt's outcome: held by another open is [`OpenError::Locked`].
fn locked(attempt: std::result::Result<(), TryLockError>, path: &Path) -> Result<()> {
    // `OpenError::Locked` names this path to the caller: it must name a file.
    debug_assert!(!path.as_os_str().is_empty(), "a lock error naming no file");
    match attempt {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => {
            Err(Error::Open(OpenError::Locked { path: path.to_path_buf() }))
        }
        Err(TryLockError::Error(source)) => Err(io_error("lock", source)),
    }
}

pub(super) fn io_error(op: &'static str, source: std::io::Error) -> Error {
    // The message says which step failed: "open to lock", "lock", "create", "remove".
    debug_assert!(!op.is_empty(), "an I/O error naming no step: {source}");
    Error::Device(crate::device::DeviceError::Io { op, offset: 0, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_paths(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("wafer-exclusive-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (dir.join("db"), dir.join("db.wal"))
    }

    #[test]
    fn a_second_acquire_is_refused_until_the_first_is_dropped() {
        let (data, wal) = temp_paths("second");
        let first = acquire(&data, &wal, true).unwrap().unwrap();
        assert!(first.created);
        let err = acquire(&data, &wal, true).unwrap_err();
        assert!(matches!(&err, Error::Open(OpenError::Locked { path }) if *path == data), "{err}");
        drop(first);
        let again = acquire(&data, &wal, true).unwrap().unwrap();
        assert!(!again.created, "the files exist now");
    }

    #[test]
    fn nothing_is_created_when_creation_is_not_allowed_or_the_wal_is_alone() {
        let (data, wal) = temp_paths("absent");
        assert!(acquire(&data, &wal, false).unwrap().is_none());
        assert!(!data.exists() && !wal.exists());
        std::fs::write(&wal, b"a log without its data file").unwrap();
        assert!(acquire(&data, &wal, true).unwrap().is_none());
        assert!(!data.exists(), "creating beside another's log is the open's refusal to make");
    }
}
