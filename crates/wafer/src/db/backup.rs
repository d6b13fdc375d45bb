//! Online backup: a snapshot copied, tree by tree, into a new database that opens on its own.
//! Writers go on meanwhile; the copy is the state of the last commit before the backup began.
//!
//! The copy is logical (entries, not pages), so the backup is compact whatever the source's
//! free space and fragmentation, and it is written under temporary names beside the target and
//! linked into place only once closed: the WAL first, then the data file, whose link is the
//! commit point. A crash before it leaves no database at the target (at most its WAL alone,
//! which an open reports as `OpenError::DataFileMissing`, and the temporary files, named
//! `<target>.backup-<pid>-<n>`); after it, a database that checks clean.
use super::{exclusive, wal_path, Db};
use crate::error::OpenError;
use crate::options::CreateMode;
use crate::{MaintenanceError, Result, Snapshot, WriteBatch};
use std::path::{Path, PathBuf};

/// A copy batch holds at most this many bytes of keys and values (fewer when the target's log
/// is small: `DbInner::batch_fits_log`), enough to amortise a commit.
const COPY_BATCH_BYTES: usize = 1 << 20;
/// ... and at most this many entries.
const COPY_BATCH_ENTRIES: usize = 4096;

/// What a copy or backup wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackupTotals {
    pub trees: u64,
    pub entries: u64,
    /// Keys and values, as the user sees them.
    pub bytes: u64,
}

impl Snapshot {
    /// Copies every tree of the view into `dest`, which must hold no trees, in batches of
    /// bounded size (durability `None`: the caller syncs or closes `dest`). A `dest` holding
    /// trees is refused with [`MaintenanceError::NotEmpty`].
    pub fn copy_to(&self, dest: &Db) -> Result<BackupTotals, MaintenanceError> {
        let existing = dest.tree_names()?;
        if !existing.is_empty() {
            return Err(MaintenanceError::NotEmpty { trees: existing });
        }
        let mut totals = BackupTotals::default();
        for name in self.tree_names() {
            dest.tree(&name)?; // An empty tree is a tree too.
            totals.trees += 1;
            let mut batch = WriteBatch::new();
            let mut batch_bytes = 0usize;
            for kv in self.tree(&name).iter() {
                let (key, value) = kv?;
                let bytes = key.len() + value.len();
                let fits = batch_bytes + bytes <= COPY_BATCH_BYTES
                    && batch.len() < COPY_BATCH_ENTRIES
                    && dest
                        .inner
                        .batch_fits_log((batch_bytes + bytes) as u64, batch.len() as u64 + 1)?;
                if !fits && !batch.is_empty() {
                    dest.write_with(&batch, crate::Durability::None)?;
                    batch = WriteBatch::new();
                    batch_bytes = 0;
                }
                batch_bytes += bytes;
                totals.entries += 1;
                totals.bytes += bytes as u64;
                batch.put(&name, &key, &value);
            }
            if !batch.is_empty() {
                dest.write_with(&batch, crate::Durability::None)?;
            }
        }
        assert_eq!(totals.trees, self.tree_names().len() as u64, "every tree copied");
        Ok(totals)
    }
}

impl Db {
    /// Writes a consistent copy of the database to a new database at `path` (its WAL at
    /// `<path>.wal`), from a snapshot, while writes go on. Neither file may exist. The copy
    /// uses this database's options (write mode, sizes, blobs). See the module docs for what a
    /// crash part way leaves. A target that names a directory or an existing file is refused
    /// with [`MaintenanceError::Open`] (`OpenError::NotAFilePath`, `OpenError::AlreadyExists`).
    pub fn backup_to(&self, path: impl AsRef<Path>) -> Result<BackupTotals, MaintenanceError> {
        let path = path.as_ref();
        let text = path.as_os_str().to_string_lossy();
        if text.chars().last().is_some_and(std::path::is_separator) || path.is_dir() {
            // Else the temporary file would land inside that directory, named after nothing.
            return Err(OpenError::NotAFilePath { what: text.into_owned() }.into());
        }
        let target_wal = wal_path(path);
        for p in [path, target_wal.as_path()] {
            if p.exists() {
                return Err(OpenError::AlreadyExists { what: p.display().to_string() }.into());
            }
        }
        let snap = self.snapshot()?;
        let temp = temp_path(path);
        // The copy is made beside the target, never over it: linking it into place is the
        // only step that writes the target's names.
        assert_ne!(temp.as_path(), path, "a backup's temporary name is its target");
        let options = self.inner.options.clone().with_create(CreateMode::New);
        let copied = Db::open(&temp, options).map_err(MaintenanceError::from).and_then(|dest| {
            let totals = snap.copy_to(&dest)?;
            dest.close()?;
            Ok(totals)
        });
        drop(snap);
        let linked = copied.and_then(|totals| {
            link_into_place(&temp, path).map_err(MaintenanceError::from)?;
            Ok(totals)
        });
        // The temporary names go either way (after a link, the target holds the files).
        let _ = std::fs::remove_file(wal_path(&temp));
        let _ = std::fs::remove_file(&temp);
        linked
    }
}

/// `<path>.backup-<pid>-<n>`: unique among this process's backups, and tied to `path`'s
/// directory, so the final links stay within one file system.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".backup-{}-{n}", std::process::id()));
    let temp = PathBuf::from(name);
    // The copy is made under this name and removed after: never one of the target's names.
    debug_assert!(temp != path && temp != wal_path(path), "{}", temp.display());
    temp
}

/// Links the closed temporary pair to the target names (`link(2)` refuses an existing name),
/// the WAL first; then makes the links durable.
fn link_into_place(temp: &Path, path: &Path) -> Result<()> {
    // `temp_path`'s hand-over: one directory, so one file system for `link(2)` and one sync.
    debug_assert_eq!(temp.parent(), path.parent(), "backup linked across directories");
    let io = |op: &'static str| move |e: std::io::Error| exclusive::io_error(op, e);
    std::fs::hard_link(wal_path(temp), wal_path(path)).map_err(io("backup: link the WAL"))?;
    std::fs::hard_link(temp, path).map_err(io("backup: link the data file"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::File::open(&dir).and_then(|d| d.sync_all()).map_err(io("backup: sync the directory"))
}
