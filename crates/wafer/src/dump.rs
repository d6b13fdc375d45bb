//! A portable, versioned and checksummed stream of every tree of a database, for upgrades
//! (dump with one version, load with the next) and salvage (whatever a damaged database still
//! reads). The stream names trees by name and holds keys and values as the application wrote
//! them: nothing of the page, blob or WAL formats, so it outlives them.
//!
//! ```text
//! header   "WAFERDMP" [version u16 = 1][flags u16 = 0][crc32c u32 of the 12 bytes before]
//! record   [tag u8][body][crc32c u32 of tag and body]
//!   tag 1 TREE   [name_len u16][name]                     the entries after it are this tree's
//!   tag 2 ENTRY  [key_len u32][value_len u64][key][value]
//!   tag 3 END    [trees u64][entries u64][value_bytes u64] the totals, checked by the loader
//! ```
//! All integers little-endian. Trees come in name order and keys in key order within a tree,
//! so two dumps of one state are byte-identical. A stream ends with exactly one END record;
//! anything after it, or a stream without it, is refused.
use crate::{Db, Error, WriteBatch};
use std::io::{Read, Write};
use thiserror::Error;

pub const MAGIC: &[u8; 8] = b"WAFERDMP";
pub const VERSION: u16 = 1;
const TAG_TREE: u8 = 1;
const TAG_ENTRY: u8 = 2;
const TAG_END: u8 = 3;
/// A value longer than this is refused before any of it is read: a corrupt length must not make
/// the loader allocate without bound (the engine's blobs hold values well under it).
pub const VALUE_BYTES_MAX: u64 = 4 << 30;
/// A load commits a batch once it holds this many entries or bytes (the engine checkpoints as
/// its log fills; a batch must fit the log).
const BATCH_ENTRIES_MAX: usize = 1024;
const BATCH_BYTES_MAX: usize = 1 << 20;

/// What a dump wrote or a load read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DumpTotals {
    pub trees: u64,
    pub entries: u64,
    pub value_bytes: u64,
}

/// Why a dump or a load stopped.
#[derive(Debug, Error)]
pub enum DumpError {
    #[error("dump stream I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Db(#[from] Error),
    #[error("not a Wafer dump (no magic at its start)")]
    NotADump,
    #[error("dump version {0} is not one this build reads (it reads {VERSION})")]
    Version(u16),
    #[error("dump record {record} fails its checksum")]
    Checksum { record: u64 },
    #[error("dump record {record}: {reason}")]
    Malformed { record: u64, reason: String },
    #[error("dump ends at record {record} without its END record (truncated)")]
    Truncated { record: u64 },
    #[error("the database to load into already holds trees: {0:?}")]
    NotEmpty(Vec<String>),
}

// The per-operation errors of the calls a dump makes, kept whole as the umbrella error.
crate::from_operation_errors!(DumpError, DumpError::Db);

impl From<DumpError> for Error {
    fn from(e: DumpError) -> Error {
        match e {
            DumpError::Db(e) => e,
            other => crate::Corruption::Dump(Box::new(other)).into(),
        }
    }
}

/// Writes every tree of `db` to `out`. Values are read as the trees' iterators yield them.
pub fn dump(db: &Db, out: impl Write) -> Result<DumpTotals, DumpError> {
    let mut out = std::io::BufWriter::new(out);
    let mut header = Vec::with_capacity(16);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&0u16.to_le_bytes());
    header.extend_from_slice(&crc32c::crc32c(&header).to_le_bytes());
    out.write_all(&header)?;
    let mut totals = DumpTotals::default();
    // One view of every tree, however long the dump takes and whatever writers do meanwhile.
    let snap = db.snapshot()?;
    let mut names = snap.tree_names();
    names.sort();
    for name in &names {
        let name_len = u16::try_from(name.len()).map_err(|_| malformed(0, "tree name too long"))?;
        let mut body = name_len.to_le_bytes().to_vec();
        body.extend_from_slice(name.as_bytes());
        write_record(&mut out, TAG_TREE, &[&body])?;
        totals.trees += 1;
        // Bounded by the tree's entries.
        for kv in snap.tree(name).iter() {
            let (key, value) = kv?;
            let mut lens = (key.len() as u32).to_le_bytes().to_vec();
            lens.extend_from_slice(&(value.len() as u64).to_le_bytes());
            write_record(&mut out, TAG_ENTRY, &[&lens, &key, &value])?;
            totals.entries += 1;
            totals.value_bytes += value.len() as u64;
        }
    }
    let mut end = totals.trees.to_le_bytes().to_vec();
    end.extend_from_slice(&totals.entries.to_le_bytes());
    end.extend_from_slice(&totals.value_bytes.to_le_bytes());
    write_record(&mut out, TAG_END, &[&end])?;
    out.flush()?;
    Ok(totals)
}

fn write_record(out: &mut impl Write, tag: u8, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut crc = crc32c::crc32c(&[tag]);
    out.write_all(&[tag])?;
    for part in parts {
        crc = crc32c::crc32c_append(crc, part);
        out.write_all(part)?;
    }
    out.write_all(&crc.to_le_bytes())
}

fn malformed(record: u64, reason: &str) -> DumpError {
    DumpError::Malformed { record, reason: reason.into() }
}

/// Loads a stream [`dump`] wrote into `db`, which must hold no trees yet. Entries commit in
/// batches as they are read; the totals are checked against the END record, and `db` is
/// synced before this returns. A stream refused half-way leaves the batches before it in `db`.
pub fn load(input: impl Read, db: &Db) -> Result<DumpTotals, DumpError> {
    let existing = db.tree_names()?;
    if !existing.is_empty() {
        return Err(DumpError::NotEmpty(existing));
    }
    let mut r = Reader { input: std::io::BufReader::new(input), record: 0 };
    r.header()?;
    let mut totals = DumpTotals::default();
    let mut tree: Option<String> = None;
    let mut batch = WriteBatch::new();
    let mut batch_bytes = 0usize;
    loop {
        match r.record()? {
            Record::Tree(name) => {
                db.tree(&name)?; // An empty tree is a tree too.
                tree = Some(name);
                totals.trees += 1;
            }
            Record::Entry(key, value) => {
                let Some(name) = &tree else {
                    return Err(malformed(r.record, "an entry before any tree"));
                };
                totals.entries += 1;
                totals.value_bytes += value.len() as u64;
                batch_bytes += key.len() + value.len();
                batch.put(name, &key, &value);
                if batch.len() >= BATCH_ENTRIES_MAX || batch_bytes >= BATCH_BYTES_MAX {
                    db.write_with(&batch, crate::Durability::None).map_err(Error::from)?;
                    (batch, batch_bytes) = (WriteBatch::new(), 0);
                }
            }
            Record::End(expected) => {
                if expected != totals {
                    let reason = format!("END says {expected:?}, the stream held {totals:?}");
                    return Err(DumpError::Malformed { record: r.record, reason });
                }
                r.no_trailing_bytes()?;
                if !batch.is_empty() {
                    db.write_with(&batch, crate::Durability::None).map_err(Error::from)?;
                }
                db.sync()?;
                return Ok(totals);
            }
        }
    }
}

enum Record {
    Tree(String),
    Entry(Vec<u8>, Vec<u8>),
    End(DumpTotals),
}

/// Reads records one at a time, each checked against its checksum before it is used.
struct Reader<R> {
    input: R,
    /// Records read so far (for error messages).
    record: u64,
}

impl<R: Read> Reader<R> {
    fn header(&mut self) -> Result<(), DumpError> {
        let mut h = [0u8; 16];
        if self.input.read_exact(&mut h).is_err() || &h[..8] != MAGIC {
            return Err(DumpError::NotADump);
        }
        if crc32c::crc32c(&h[..12]).to_le_bytes() != h[12..16] {
            return Err(DumpError::Checksum { record: 0 });
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if version != VERSION {
            return Err(DumpError::Version(version));
        }
        Ok(())
    }

    /// Exactly `len` bytes, read in pieces so a corrupt length fails as truncation, not as an
    /// allocation of that length.
    fn bytes(&mut self, len: u64, crc: &mut u32) -> Result<Vec<u8>, DumpError> {
        let mut out = Vec::new();
        let read = (&mut self.input).take(len).read_to_end(&mut out)?;
        if read as u64 != len {
            return Err(DumpError::Truncated { record: self.record });
        }
        *crc = crc32c::crc32c_append(*crc, &out);
        Ok(out)
    }

    fn record(&mut self) -> Result<Record, DumpError> {
        self.record += 1;
        let mut crc = 0u32;
        let tag = self.bytes(1, &mut crc)?[0];
        let record = match tag {
            TAG_TREE => {
                let len = self.bytes(2, &mut crc)?;
                let name = self.bytes(u64::from(u16::from_le_bytes([len[0], len[1]])), &mut crc)?;
                let name = String::from_utf8(name)
                    .map_err(|_| malformed(self.record, "tree name is not UTF-8"))?;
                Record::Tree(name)
            }
            TAG_ENTRY => {
                let lens = self.bytes(12, &mut crc)?;
                let key_len = u64::from(u32::from_le_bytes([lens[0], lens[1], lens[2], lens[3]]));
                let value_len = crate::le::get_u64(&lens, 4);
                if value_len > VALUE_BYTES_MAX {
                    let reason = format!("value of {value_len} bytes (limit {VALUE_BYTES_MAX})");
                    return Err(DumpError::Malformed { record: self.record, reason });
                }
                let key = self.bytes(key_len, &mut crc)?;
                Record::Entry(key, self.bytes(value_len, &mut crc)?)
            }
            TAG_END => {
                let b = self.bytes(24, &mut crc)?;
                let (trees, entries) = (crate::le::get_u64(&b, 0), crate::le::get_u64(&b, 8));
                Record::End(DumpTotals { trees, entries, value_bytes: crate::le::get_u64(&b, 16) })
            }
            other => return Err(malformed(self.record, &format!("unknown tag {other}"))),
        };
        let mut stored = [0u8; 4];
        self.input
            .read_exact(&mut stored)
            .map_err(|_| DumpError::Truncated { record: self.record })?;
        if u32::from_le_bytes(stored) != crc {
            return Err(DumpError::Checksum { record: self.record });
        }
        Ok(record)
    }

    fn no_trailing_bytes(&mut self) -> Result<(), DumpError> {
        let mut extra = [0u8; 1];
        match self.input.read(&mut extra)? {
            0 => Ok(()),
            _ => Err(malformed(self.record, "bytes after the END record")),
        }
    }
}
