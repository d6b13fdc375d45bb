//! What an open finds before it touches anything: the files' sizes, the raw superblock and, when
//! the superblock is blank, whether the WAL shows a database existed. Every check here only
//! reads, so a refusal leaves the files as they were (docs/internals/recovery.md, "Creation").
use crate::device::{AlignedBuf, Device};
use crate::durable::record::KIND_COMMIT;
use crate::error::{NotWafer, OpenError, SizeMismatch, WalEvidence};
use crate::options::{CreateMode, Options, WriteMode};
use crate::page::meta::MAGIC;
use crate::page::{get_u64, PAGE_SIZE};
use crate::wal::{Wal, WalError};
use crate::{Error, Result};
use std::path::Path;
use std::sync::Arc;

/// Names the files or devices in open errors.
#[derive(Debug, Clone)]
pub(super) struct Names {
    pub data: String,
    pub wal: String,
}

impl Names {
    pub fn devices() -> Names {
        let names = Names { data: "data device".into(), wal: "WAL device".into() };
        // Documented in `OpenError`: a device is named by its role, a file by its path.
        debug_assert!(names.data.ends_with("device") && names.wal.ends_with("device"));
        names
    }
}

/// A fresh log's first record starts here (first block after the two header blocks, past its
/// block header): a log whose start moved was truncated by a checkpoint.
const FRESH_LOG_START_LSN: u64 = crate::wal::format::BLOCK_HEADER_BYTES as u64;
/// Records a probe reads at most: creation writes three (image, commit, checkpoint), so a few
/// more settle the question without scanning a long log.
const PROBE_RECORDS_MAX: u32 = 64;

/// What `Db::open(path)` found on disk: which sizes to open the files with, and whether they
/// are new.
#[derive(Debug)]
pub(super) struct FileSizes {
    pub data_bytes: u64,
    pub wal_bytes: u64,
    pub create: CreateMode,
}

/// A new pair of files spans the options' capacities, in whole pages.
pub(super) fn new_file_sizes(options: &Options) -> FileSizes {
    let block = PAGE_SIZE as u64;
    let sizes = FileSizes {
        data_bytes: options.file_capacity_bytes / block * block,
        wal_bytes: options.wal_capacity_bytes / block * block,
        create: CreateMode::New,
    };
    // Rounded down to whole pages, by less than one: a new file never exceeds what was asked.
    debug_assert!(sizes.data_bytes + block > options.file_capacity_bytes);
    sizes
}

/// Checks the data file and its WAL before either is opened (opening creates and extends).
/// Files that exist keep their sizes; a new pair spans the options' capacities.
pub(super) fn file_sizes(path: &Path, wal_path: &Path, options: &Options) -> Result<FileSizes> {
    let block = PAGE_SIZE as u64;
    let names = Names { data: path.display().to_string(), wal: wal_path.display().to_string() };
    let data = std::fs::metadata(path).ok().map(|m| m.len());
    let wal = std::fs::metadata(wal_path).ok().map(|m| m.len());
    match (data, wal) {
        (None, None) => {
            if options.create == CreateMode::Never {
                return Err(OpenError::Missing { what: names.data }.into());
            }
            Ok(new_file_sizes(options))
        }
        (Some(_), None) => Err(Error::WalFileMissing { path: wal_path.to_path_buf() }),
        (None, Some(_)) => {
            Err(OpenError::DataFileMissing { what: names.data, wal: names.wal }.into())
        }
        (Some(0), Some(_)) => {
            Err(OpenError::EmptyDataFile { what: names.data, wal: names.wal }.into())
        }
        (Some(data_bytes), Some(wal_bytes)) => {
            if options.create == CreateMode::New {
                return Err(OpenError::AlreadyExists { what: names.data }.into());
            }
            if wal_bytes < 2 * block {
                return Err(Error::Wal(WalError::Truncated {
                    expected_bytes: 2 * block,
                    actual_bytes: wal_bytes,
                }));
            }
            // Existing files: a blank superblock may still be an interrupted creation, which
            // `classify` tells apart from a lost database.
            let sizes = FileSizes {
                data_bytes: data_bytes / block * block,
                wal_bytes: wal_bytes / block * block,
                create: CreateMode::IfMissing,
            };
            // Rounding down to whole pages keeps the log's two header blocks.
            debug_assert!(sizes.wal_bytes >= 2 * block, "{} WAL bytes", sizes.wal_bytes);
            Ok(sizes)
        }
    }
}

/// The superblock as raw bytes, before any store reads or repairs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Superblock {
    Blank,
    /// Carries the database magic (the checksum is the store's and recovery's business: a torn
    /// superblock is repaired from the doublewrite area first).
    Wafer,
}

/// Reads page 0's raw bytes at `data_offset_bytes` and refuses what cannot be a database.
pub(super) fn read_superblock(
    device: &dyn Device,
    options: &Options,
    names: &Names,
) -> Result<Superblock> {
    let offset = options.data_offset_bytes;
    // `check_options` ran first: the superblock read below is page-aligned, as direct I/O needs.
    debug_assert!(offset.is_multiple_of(PAGE_SIZE as u64), "data offset {offset}");
    let capacity = device.capacity_bytes();
    if capacity < offset + 4 * PAGE_SIZE as u64 {
        return Err(OpenError::SizeMismatch {
            what: names.data.clone(),
            detail: SizeMismatch::TooSmall { capacity_bytes: capacity, offset },
        }
        .into());
    }
    if options.write_mode == WriteMode::OutOfPlace
        && !super::mode::has_conventional_superblock(device)
    {
        // mode::open_store refuses it with the reason; a zone refuses reads past its pointer.
        return Ok(Superblock::Wafer);
    }
    let mut sb = AlignedBuf::zeroed(PAGE_SIZE);
    device.read_at(offset, &mut sb)?;
    if sb.iter().all(|b| *b == 0) {
        return Ok(Superblock::Blank);
    }
    if get_u64(&sb, 8) == MAGIC {
        return Ok(Superblock::Wafer);
    }
    // A superblock torn on its very first write: the doublewrite area holds its copy.
    if options.write_mode == WriteMode::InPlace
        && options.doublewrite
        && doublewrite_header(device)?
    {
        return Ok(Superblock::Wafer);
    }
    Err(OpenError::NotWaferDatabase {
        what: names.data.clone(),
        reason: NotWafer::NoSuperblockMagic { offset },
    }
    .into())
}

fn doublewrite_header(device: &dyn Device) -> Result<bool> {
    // Read after the superblock behind the doublewrite area: the device holds both blocks.
    debug_assert!(device.capacity_bytes() >= 2 * PAGE_SIZE as u64);
    let mut block = AlignedBuf::zeroed(PAGE_SIZE);
    device.read_at(0, &mut block)?;
    Ok(get_u64(&block, 4) == crate::buffer::doublewrite::MAGIC)
}

/// What a WAL device holds, read without changing it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WalContents {
    /// Never formatted.
    Blank,
    /// Formatted and holding at most the creation's own batch: a creation cut short.
    Creation,
    /// The log of a database that existed (why, for the error).
    Database(WalEvidence),
}

fn probe_wal(wal: &Arc<dyn Device>, options: &Options, names: &Names) -> Result<WalContents> {
    // `check_options` ran first: an error below is the device's, never the options'.
    debug_assert!(options.wal.validate().is_ok(), "the log probed with refused options");
    let mut rec = match Wal::open(wal.clone(), options.wal.clone()) {
        Ok(rec) => rec,
        Err(WalError::Missing) => return Ok(WalContents::Blank),
        Err(WalError::BadMagic) => {
            return Err(OpenError::NotWaferDatabase {
                what: names.wal.clone(),
                reason: NotWafer::NoWalMagic,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    if rec.start_lsn().0 != FRESH_LOG_START_LSN {
        let start_lsn = rec.start_lsn().0;
        return Ok(WalContents::Database(WalEvidence::Checkpointed { start_lsn }));
    }
    let mut commits = 0u32;
    for _ in 0..PROBE_RECORDS_MAX {
        let Some(record) = rec.next_record()? else { break };
        commits += u32::from(record.kind == KIND_COMMIT);
        if commits > 1 {
            return Ok(WalContents::Database(WalEvidence::Commits { lsn: record.lsn.0 }));
        }
    }
    Ok(WalContents::Creation)
}

/// Decides whether this open formats: Ok(true) to create, Ok(false) to open what is there.
pub(super) fn decide_create(
    superblock: Superblock,
    wal: Option<&Arc<dyn Device>>,
    options: &Options,
    create: CreateMode,
    names: &Names,
) -> Result<bool> {
    let decided = match (superblock, create) {
        (Superblock::Wafer, CreateMode::New) => {
            Err(OpenError::AlreadyExists { what: names.data.clone() }.into())
        }
        (Superblock::Wafer, _) => Ok(false),
        (Superblock::Blank, CreateMode::Never) => {
            Err(OpenError::Missing { what: names.data.clone() }.into())
        }
        (Superblock::Blank, _) => {
            let Some(wal) = wal else { return Ok(true) };
            match probe_wal(wal, options, names)? {
                WalContents::Blank | WalContents::Creation => Ok(true),
                WalContents::Database(evidence) => {
                    Err(OpenError::BlankSuperblock { what: names.data.clone(), evidence }.into())
                }
            }
        }
    };
    // Formatting overwrites page 0: only a blank one, and only where creation is allowed.
    assert!(
        !matches!(decided, Ok(true))
            || (superblock == Superblock::Blank && create != CreateMode::Never),
        "an open decided to format over {superblock:?} ({create:?})"
    );
    decided
}
