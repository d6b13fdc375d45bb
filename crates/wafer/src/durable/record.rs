//! Redo record payloads: the engine's side of the WAL. The log frames, checksums and orders the
//! records; this module gives each payload an explicit, versioned little-endian encoding.
//!
//! ```text
//! kind 1 PUT     [ver u8=2][pid v][tree_id v][key_len v][val_len v][key][value]
//!                version 1 (still read): [ver u8=1][pid u64][tree_id u32][key_len u16]
//!                [val_len u16][key][value]
//! kind 2 DELETE  [ver u8=2][pid v][tree_id v][key_len v][key]
//!                version 1 (still read): [ver u8=1][pid u64][tree_id u32][key_len u16][key]
//! kind 3 IMAGE   [ver u8=1][pid u64][page 4096 bytes]
//! kind 4 COMMIT  [ver u8=3][flags u8][fields u8][field v ...][ops v]
//!                ops x ([op u8][start v][len v])
//!                v: unsigned LEB128, shortest form (`crate::varint`). flags bit 0 FOLDED: the
//!                blob space's free-extent tree holds every extent change committed before
//!                this record. fields bit i set: state field i follows (0 high_water,
//!                1 free_head, 2 free_count, 3 next_tree_id, 4 write_clock); a field left out
//!                is as the COMMIT or CKPT record before it says (redo carries the state).
//!                op 1 TAKE / 2 GIVE: pages start..start+len leave / join the free extents
//!                (the batch's blob runs claimed and freed, the blob space grown or shrunk)
//!                version 2 (still read): [ver u8=2][flags u8][high_water v][free_head v]
//!                [free_count v][next_tree_id v][write_clock v][ops v] ops, every field
//!                version 1 (still read): [ver u8=1][high_water u64][free_head u64]
//!                [free_count u64][next_tree_id u32][write_clock u64], no flags, no ops
//! kind 5 CKPT    the version 2 COMMIT body, flags 0: the state at the checkpoint's redo
//!                start, and the extent changes committed since the last fold (redo starts
//!                after them)
//! kind 6 ABORT   [ver u8=1]: page records since the last COMMIT belong to a dead batch
//! kind 7 IMAGE_GAP [ver u8=1][pid u64][low_end u16][high_start u16][page[..low_end]]
//!                [page[high_start..4096]]: a node page whose bytes between its slot array and
//!                its cell heap are all zero (every page `node::build` wrote), logged without
//!                them; redo puts the zeros back, so the page comes back byte for byte
//! kind 8 REBUILD [ver u8=1][pid u64][tree_id u32][keep u16][count u16]
//!                count x ([key_len u16][val_len u16][key][value]): a node rebuilt from its own
//!                entries with these put in, the first `keep` kept (`PageChange::NodeRebuild`)
//! ```
use crate::alloc::AllocState;
use crate::page::node::Entry;
use crate::page::{PageBuf, PageChange, PageId, PAGE_SIZE};
use std::ops::Range;

pub const KIND_PUT: u8 = 1;
pub const KIND_DELETE: u8 = 2;
pub const KIND_IMAGE: u8 = 3;
pub const KIND_COMMIT: u8 = 4;
pub const KIND_CHECKPOINT: u8 = 5;
pub const KIND_ABORT: u8 = 6;
pub const KIND_IMAGE_GAP: u8 = 7;
pub const KIND_REBUILD: u8 = 8;
/// Set on the kind of a record whose payload is LZ4-compressed: `[raw_len u32][LZ4 block]`,
/// decompressing to the payload of `kind & !KIND_COMPRESSED`. Payloads of at least
/// [`COMPRESS_MIN_BYTES`] that shrink by an eighth or more are stored so (page images of
/// splits, rebuilds and puts of large inline values).
pub const KIND_COMPRESSED: u8 = 0x80;
pub const COMPRESS_MIN_BYTES: usize = 512;
/// No record payload decompresses to more than this (a page image and its header fit).
const DECOMPRESSED_MAX_BYTES: usize = 64 << 10;
/// A gap shorter than this is logged as part of a full image (the 4 bytes of bounds would
/// save nothing worth a second record layout).
const IMAGE_GAP_MIN_BYTES: usize = 64;
pub const RECORD_VERSION: u8 = 1;
/// Version of PUT and DELETE records written now (version 1 is still read): the per-update
/// records, whose fixed-width ids and lengths took about 10 bytes more than their varints.
pub const LEAF_VERSION: u8 = 2;
/// Version of CHECKPOINT records written now, and of COMMIT records before version 3
/// (version 1 is still read).
pub const STATE_VERSION: u8 = 2;
/// Version of COMMIT records written now: only the state fields that changed. Most batches
/// change only the write clock, if that; the four fields left out saved 6-8 bytes a commit.
pub const COMMIT_VERSION: u8 = 3;
/// State fields a COMMIT record may carry (the `fields` bits).
const STATE_FIELDS: usize = 5;
const FLAG_FOLDED: u8 = 1;
const OP_TAKE: u8 = 1;
const OP_GIVE: u8 = 2;

/// What the allocator and catalog look like after a committed batch (or at a checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineState {
    pub alloc: AllocState,
    pub next_tree_id: u32,
    /// The pool's write-back clock, so write histories stay monotonic across a crash.
    pub write_clock: u64,
}

/// A change to the blob space's free extents, logged in the commit record of the batch that
/// made it (recovery replays them onto the free-extent tree as of its last fold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtentOp {
    /// The pages leave the free extents (a blob's run claimed, the space shrunk at its top).
    Take(Range<PageId>),
    /// The pages join them (a replaced blob's run freed, the space grown).
    Give(Range<PageId>),
}

impl EngineState {
    fn fields(&self) -> [u64; STATE_FIELDS] {
        let a = &self.alloc;
        [a.high_water, a.free_head, a.free_count, u64::from(self.next_tree_id), self.write_clock]
    }
}

/// The state fields a COMMIT record carries: those that changed since the state record before
/// it (None: as that record says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateFields(pub [Option<u64>; STATE_FIELDS]);

impl StateFields {
    /// Every field of `now`, or those that differ from `prev`.
    pub fn since(prev: Option<&EngineState>, now: &EngineState) -> StateFields {
        let now_fields = now.fields();
        let prev_fields = prev.map(EngineState::fields);
        let mut out = [None; STATE_FIELDS];
        for (i, v) in now_fields.into_iter().enumerate() {
            out[i] = (prev_fields.map(|p| p[i]) != Some(v)).then_some(v);
        }
        StateFields(out)
    }

    /// The state after the record: `prev` with the carried fields replaced.
    pub fn apply(&self, prev: &EngineState) -> Result<EngineState, String> {
        let mut v = prev.fields();
        for (field, carried) in v.iter_mut().zip(self.0) {
            *field = carried.unwrap_or(*field);
        }
        let next_tree_id = u32::try_from(v[3]).map_err(|_| "tree id beyond 32 bits")?;
        let alloc = AllocState { high_water: v[0], free_head: v[1], free_count: v[2] };
        Ok(EngineState { alloc, next_tree_id, write_clock: v[4] })
    }
}

/// A COMMIT record as the log holds it: the state fields it carries, the fold flag and the
/// extent changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedCommit {
    pub fields: StateFields,
    pub folded: bool,
    pub extents: Vec<ExtentOp>,
}

/// A commit record: the engine state after the batch and the extent changes it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitBody {
    pub state: EngineState,
    /// The free-extent tree holds every extent change committed before this record.
    pub folded: bool,
    pub extents: Vec<ExtentOp>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Put {
        pid: PageId,
        tree_id: u32,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        pid: PageId,
        tree_id: u32,
        key: Vec<u8>,
    },
    Image {
        pid: PageId,
        page: Box<PageBuf>,
    },
    Rebuild {
        pid: PageId,
        tree_id: u32,
        insert: Vec<Entry>,
        keep: usize,
    },
    Commit(LoggedCommit),
    /// Never `folded`; its extents are those committed since the last fold.
    Checkpoint(CommitBody),
    Abort,
}

/// Encodes a page change into `out` (cleared first) and returns the record kind.
pub fn encode_change(pid: PageId, change: &PageChange<'_>, out: &mut Vec<u8>) -> u8 {
    out.clear();
    match change {
        PageChange::LeafPut { tree_id, key, value } => {
            assert!(key.len() <= u16::MAX as usize && value.len() <= u16::MAX as usize);
            out.push(LEAF_VERSION);
            for v in [pid, u64::from(*tree_id), key.len() as u64, value.len() as u64] {
                crate::varint::put(out, v);
            }
            out.extend_from_slice(key);
            out.extend_from_slice(value);
            KIND_PUT
        }
        PageChange::LeafDelete { tree_id, key } => {
            assert!(key.len() <= u16::MAX as usize);
            out.push(LEAF_VERSION);
            for v in [pid, u64::from(*tree_id), key.len() as u64] {
                crate::varint::put(out, v);
            }
            out.extend_from_slice(key);
            KIND_DELETE
        }
        PageChange::NodeRebuild { tree_id, insert, keep } => {
            encode_rebuild(pid, *tree_id, insert, *keep, out)
        }
        PageChange::Image { page } => encode_image(pid, page, out),
    }
}

/// A version 1 REBUILD record (the page id fixed-width, as every version 1 record).
fn encode_rebuild(
    pid: PageId,
    tree_id: u32,
    insert: &[Entry],
    keep: usize,
    out: &mut Vec<u8>,
) -> u8 {
    assert!(keep <= u16::MAX as usize && insert.len() <= u16::MAX as usize);
    out.push(RECORD_VERSION);
    out.extend_from_slice(&pid.to_le_bytes());
    out.extend_from_slice(&tree_id.to_le_bytes());
    out.extend_from_slice(&(keep as u16).to_le_bytes());
    out.extend_from_slice(&(insert.len() as u16).to_le_bytes());
    for (k, v) in insert.iter() {
        assert!(k.len() <= u16::MAX as usize && v.len() <= u16::MAX as usize);
        out.extend_from_slice(&(k.len() as u16).to_le_bytes());
        out.extend_from_slice(&(v.len() as u16).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(v);
    }
    KIND_REBUILD
}

/// A version 1 IMAGE record, or IMAGE_GAP when the page's middle is empty.
fn encode_image(pid: PageId, page: &[u8], out: &mut Vec<u8>) -> u8 {
    assert_eq!(page.len(), PAGE_SIZE);
    out.push(RECORD_VERSION);
    out.extend_from_slice(&pid.to_le_bytes());
    if let Some((low_end, high_start)) = zero_gap(page) {
        out.extend_from_slice(&(low_end as u16).to_le_bytes());
        out.extend_from_slice(&(high_start as u16).to_le_bytes());
        out.extend_from_slice(&page[..low_end]);
        out.extend_from_slice(&page[high_start..]);
        return KIND_IMAGE_GAP;
    }
    out.extend_from_slice(page);
    KIND_IMAGE
}

/// A node page's empty middle (end of the slot array .. start of the cell heap), when it is all
/// zeros and long enough to leave out of an image record: a split logs two or three images of
/// pages `node::build` just wrote, each about half empty.
fn zero_gap(page: &[u8]) -> Option<(usize, usize)> {
    use crate::page::{get_u16, node, PageKind, HEADER_BYTES, OFF_HEAP_START, OFF_KIND};
    let kind = PageKind::from_u8(page[OFF_KIND])?;
    if !matches!(kind, PageKind::Leaf | PageKind::Inner) {
        return None;
    }
    let low_end =
        HEADER_BYTES + node::SLOT_BYTES * get_u16(page, crate::page::OFF_SLOT_COUNT) as usize;
    let high_start = get_u16(page, OFF_HEAP_START) as usize;
    let long_enough = high_start <= PAGE_SIZE && low_end + IMAGE_GAP_MIN_BYTES <= high_start;
    (long_enough && page[low_end..high_start].iter().all(|b| *b == 0))
        .then_some((low_end, high_start))
}

/// Encodes a COMMIT body (version 3) into `out` (cleared first), carrying the state fields
/// that differ from `prev`, the state of the COMMIT or CKPT record logged before it (None: no
/// such record since the log was opened, so every field).
pub fn encode_commit(body: &CommitBody, prev: Option<&EngineState>, out: &mut Vec<u8>) {
    let fields = StateFields::since(prev, &body.state);
    encode_commit_v3(&fields, body.folded, &body.extents, out);
}

/// Encodes a COMMIT record as the log holds it (version 3) into `out` (cleared first).
pub fn encode_logged_commit(c: &LoggedCommit, out: &mut Vec<u8>) {
    encode_commit_v3(&c.fields, c.folded, &c.extents, out);
}

fn encode_commit_v3(fields: &StateFields, folded: bool, ops: &[ExtentOp], out: &mut Vec<u8>) {
    out.clear();
    out.push(COMMIT_VERSION);
    out.push(if folded { FLAG_FOLDED } else { 0 });
    let mask = fields.0.iter().enumerate().filter(|(_, f)| f.is_some());
    out.push(mask.fold(0u8, |m, (i, _)| m | 1 << i));
    for v in fields.0.iter().flatten() {
        crate::varint::put(out, *v);
    }
    encode_ops(ops, out);
}

/// Encodes a CHECKPOINT body (version 2) into `out` (cleared first).
pub fn encode_checkpoint(state: &EngineState, extents: &[ExtentOp], out: &mut Vec<u8>) {
    encode_state_v2(state, false, extents, out);
}

/// Payload bytes of one extent change at most (its kind and two 10-byte varints).
pub const EXTENT_OP_BYTES_MAX: usize = 21;

fn encode_state_v2(state: &EngineState, folded: bool, ops: &[ExtentOp], out: &mut Vec<u8>) {
    out.clear();
    out.push(STATE_VERSION);
    out.push(if folded { FLAG_FOLDED } else { 0 });
    for v in [
        state.alloc.high_water,
        state.alloc.free_head,
        state.alloc.free_count,
        u64::from(state.next_tree_id),
        state.write_clock,
    ] {
        crate::varint::put(out, v);
    }
    encode_ops(ops, out);
}

/// The extent changes' count and the changes.
fn encode_ops(ops: &[ExtentOp], out: &mut Vec<u8>) {
    crate::varint::put(out, ops.len() as u64);
    for op in ops {
        let (code, r) = match op {
            ExtentOp::Take(r) => (OP_TAKE, r),
            ExtentOp::Give(r) => (OP_GIVE, r),
        };
        assert!(r.start < r.end, "an extent change of no pages: {r:?}");
        out.push(code);
        crate::varint::put(out, r.start);
        crate::varint::put(out, r.end - r.start);
    }
}

/// Bounds-checked little-endian reader over a payload.
struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err(format!("payload ends {} bytes early", n - self.b.len()));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn varint(&mut self) -> Result<u64, String> {
        crate::varint::take(&mut self.b).map_err(String::from)
    }
    fn end(&self) -> Result<(), String> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes", self.b.len()))
        }
    }
}

/// The record as stored: `payload` compressed into `out` when it is large and shrinks enough
/// (returns the kind with [`KIND_COMPRESSED`] set), else None (store it as it is).
pub fn compress(kind: u8, payload: &[u8], out: &mut Vec<u8>) -> Option<u8> {
    if payload.len() < COMPRESS_MIN_BYTES || kind & KIND_COMPRESSED != 0 {
        return None;
    }
    out.clear();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&lz4_flex::block::compress(payload));
    (out.len() <= payload.len() - payload.len() / 8).then_some(kind | KIND_COMPRESSED)
}

/// The payload of a compressed record; never panics on bad bytes.
pub fn decompress(payload: &[u8]) -> Result<Vec<u8>, String> {
    let (len, block) =
        payload.split_at_checked(4).ok_or("compressed record shorter than 4 bytes")?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    if len > DECOMPRESSED_MAX_BYTES {
        return Err(format!("compressed record of {len} bytes"));
    }
    let mut out = vec![0u8; len];
    let n = lz4_flex::block::decompress_into(block, &mut out)
        .map_err(|e| format!("compressed record: {e}"))?;
    if n != len {
        return Err(format!("compressed record decompressed to {n} of {len} bytes"));
    }
    Ok(out)
}

/// Decodes a payload of `kind` (compressed or not); never panics on bad bytes.
pub fn decode(kind: u8, payload: &[u8]) -> Result<Record, String> {
    if kind & KIND_COMPRESSED != 0 {
        return decode_plain(kind & !KIND_COMPRESSED, &decompress(payload)?);
    }
    decode_plain(kind, payload)
}

fn decode_plain(kind: u8, payload: &[u8]) -> Result<Record, String> {
    let mut c = Cursor { b: payload };
    let version = c.take(1)?[0];
    if version == STATE_VERSION && matches!(kind, KIND_COMMIT | KIND_CHECKPOINT) {
        let record = decode_state_v2(kind, &mut c)?;
        c.end()?;
        return Ok(record);
    }
    if version == COMMIT_VERSION && kind == KIND_COMMIT {
        let record = decode_commit_v3(&mut c)?;
        c.end()?;
        return Ok(record);
    }
    if version == LEAF_VERSION && matches!(kind, KIND_PUT | KIND_DELETE) {
        let record = decode_leaf_v2(kind, &mut c)?;
        c.end()?;
        return Ok(record);
    }
    if version != RECORD_VERSION {
        return Err(format!("record version {version} (this build reads {RECORD_VERSION})"));
    }
    let record = decode_v1(kind, &mut c)?;
    c.end()?;
    Ok(record)
}

/// A version 1 record (fixed-width fields) after its version byte. One caller, on the
/// per-record recovery path: inlined so the split costs no call.
#[inline]
fn decode_v1(kind: u8, c: &mut Cursor<'_>) -> Result<Record, String> {
    let record = match kind {
        KIND_PUT => {
            let pid = c.u64()?;
            let tree_id = c.u32()?;
            let key_len = c.u16()? as usize;
            let val_len = c.u16()? as usize;
            let key = c.take(key_len)?.to_vec();
            let value = c.take(val_len)?.to_vec();
            Record::Put { pid, tree_id, key, value }
        }
        KIND_DELETE => {
            let pid = c.u64()?;
            let tree_id = c.u32()?;
            let key_len = c.u16()? as usize;
            let key = c.take(key_len)?.to_vec();
            Record::Delete { pid, tree_id, key }
        }
        KIND_IMAGE => {
            let pid = c.u64()?;
            let mut page = Box::new([0u8; PAGE_SIZE]);
            page.copy_from_slice(c.take(PAGE_SIZE)?);
            Record::Image { pid, page }
        }
        KIND_IMAGE_GAP => decode_image_gap_v1(c)?,
        KIND_REBUILD => decode_rebuild_v1(c)?,
        KIND_COMMIT | KIND_CHECKPOINT => {
            let alloc =
                AllocState { high_water: c.u64()?, free_head: c.u64()?, free_count: c.u64()? };
            let state = EngineState { alloc, next_tree_id: c.u32()?, write_clock: c.u64()? };
            let body = CommitBody { state, folded: false, extents: Vec::new() };
            commit_or_checkpoint(kind, body)
        }
        KIND_ABORT => Record::Abort,
        other => return Err(format!("unknown record kind {other}")),
    };
    Ok(record)
}

/// A version 1 page image without the free gap between its low and high parts.
fn decode_image_gap_v1(c: &mut Cursor<'_>) -> Result<Record, String> {
    let pid = c.u64()?;
    let (low_end, high_start) = (c.u16()? as usize, c.u16()? as usize);
    if low_end < crate::page::HEADER_BYTES || high_start < low_end || high_start > PAGE_SIZE {
        return Err(format!("image gap {low_end}..{high_start} outside the page"));
    }
    let mut page = Box::new([0u8; PAGE_SIZE]);
    page[..low_end].copy_from_slice(c.take(low_end)?);
    page[high_start..].copy_from_slice(c.take(PAGE_SIZE - high_start)?);
    Ok(Record::Image { pid, page })
}

/// A version 1 leaf rebuild: the entries kept, then those inserted.
fn decode_rebuild_v1(c: &mut Cursor<'_>) -> Result<Record, String> {
    let pid = c.u64()?;
    let tree_id = c.u32()?;
    let keep = c.u16()? as usize;
    let count = c.u16()? as usize;
    // Each entry takes at least its 4 length bytes: a count beyond that is damage.
    if count * 4 > c.b.len() {
        return Err(format!("rebuild of {count} entries in {} bytes", c.b.len()));
    }
    let mut insert = Vec::with_capacity(count);
    for _ in 0..count {
        let (key_len, val_len) = (c.u16()? as usize, c.u16()? as usize);
        insert.push((c.take(key_len)?.to_vec(), c.take(val_len)?.to_vec()));
    }
    Ok(Record::Rebuild { pid, tree_id, insert, keep })
}

/// A version 2 PUT or DELETE after its version byte.
fn decode_leaf_v2(kind: u8, c: &mut Cursor<'_>) -> Result<Record, String> {
    let pid = c.varint()?;
    let tree_id = u32::try_from(c.varint()?).map_err(|_| "tree id beyond 32 bits")?;
    let key_len = c.varint()?;
    let val_len = if kind == KIND_PUT { c.varint()? } else { 0 };
    if key_len > u64::from(u16::MAX) || val_len > u64::from(u16::MAX) {
        return Err(format!("key of {key_len} or value of {val_len} bytes in a leaf record"));
    }
    let key = c.take(key_len as usize)?.to_vec();
    if kind == KIND_DELETE {
        return Ok(Record::Delete { pid, tree_id, key });
    }
    let value = c.take(val_len as usize)?.to_vec();
    Ok(Record::Put { pid, tree_id, key, value })
}

/// A version 2 COMMIT or CHECKPOINT body after its version byte.
fn decode_state_v2(kind: u8, c: &mut Cursor<'_>) -> Result<Record, String> {
    let flags = c.take(1)?[0];
    if flags & !FLAG_FOLDED != 0 {
        return Err(format!("state record flags {flags:#x}"));
    }
    let alloc =
        AllocState { high_water: c.varint()?, free_head: c.varint()?, free_count: c.varint()? };
    let next_tree_id = u32::try_from(c.varint()?).map_err(|_| "tree id beyond 32 bits")?;
    let state = EngineState { alloc, next_tree_id, write_clock: c.varint()? };
    if kind == KIND_CHECKPOINT && flags != 0 {
        return Err("a checkpoint record marked as a fold".into());
    }
    let extents = decode_ops(c)?;
    let body = CommitBody { state, folded: flags & FLAG_FOLDED != 0, extents };
    Ok(commit_or_checkpoint(kind, body))
}

/// A COMMIT record of every state field (versions 1 and 2), or a CHECKPOINT.
fn commit_or_checkpoint(kind: u8, body: CommitBody) -> Record {
    if kind == KIND_CHECKPOINT {
        return Record::Checkpoint(body);
    }
    let fields = StateFields(body.state.fields().map(Some));
    Record::Commit(LoggedCommit { fields, folded: body.folded, extents: body.extents })
}

/// A version 3 COMMIT body after its version byte.
fn decode_commit_v3(c: &mut Cursor<'_>) -> Result<Record, String> {
    let flags = c.take(1)?[0];
    if flags & !FLAG_FOLDED != 0 {
        return Err(format!("commit record flags {flags:#x}"));
    }
    let mask = c.take(1)?[0];
    if mask >> STATE_FIELDS != 0 {
        return Err(format!("commit record state fields {mask:#x}"));
    }
    let mut fields = [None; STATE_FIELDS];
    for (i, field) in fields.iter_mut().enumerate() {
        if mask & (1 << i) != 0 {
            *field = Some(c.varint()?);
        }
    }
    if fields[3].is_some_and(|id| id > u64::from(u32::MAX)) {
        return Err("tree id beyond 32 bits".into());
    }
    let extents = decode_ops(c)?;
    let folded = flags & FLAG_FOLDED != 0;
    Ok(Record::Commit(LoggedCommit { fields: StateFields(fields), folded, extents }))
}

/// The extent changes' count and the changes.
fn decode_ops(c: &mut Cursor<'_>) -> Result<Vec<ExtentOp>, String> {
    let count = c.varint()?;
    // Each change takes at least 3 bytes: a count beyond that is damage.
    if count.saturating_mul(3) > c.b.len() as u64 {
        return Err(format!("{count} extent changes in {} bytes", c.b.len()));
    }
    let mut extents = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let code = c.take(1)?[0];
        let (start, len) = (c.varint()?, c.varint()?);
        let end =
            start.checked_add(len).filter(|_| len > 0).ok_or("an empty or wrapping extent")?;
        extents.push(match code {
            OP_TAKE => ExtentOp::Take(start..end),
            OP_GIVE => ExtentOp::Give(start..end),
            other => return Err(format!("extent change kind {other}")),
        });
    }
    Ok(extents)
}

#[cfg(test)]
mod tests {
    #[test]
    fn large_records_are_stored_compressed_and_decode_the_same() {
        let value = vec![b'v'; 1500];
        let change = PageChange::LeafPut { tree_id: 3, key: b"key", value: &value };
        let mut plain = Vec::new();
        let kind = encode_change(9, &change, &mut plain);
        let mut packed = Vec::new();
        let ck = compress(kind, &plain, &mut packed).expect("a repetitive 1.5 KB put shrinks");
        assert_eq!(ck, kind | KIND_COMPRESSED);
        assert!(packed.len() < plain.len() / 4);
        assert_eq!(decode(ck, &packed), decode(kind, &plain));
        let small = PageChange::LeafPut { tree_id: 3, key: b"k", value: b"v" };
        let k = encode_change(9, &small, &mut plain);
        assert_eq!(compress(k, &plain, &mut packed), None, "small records stay as they are");
        assert!(decode(ck, &packed[..3]).is_err());
        assert!(decode(ck, &[0xff, 0xff, 0xff, 0x7f, 0]).is_err(), "a huge length is refused");
    }

    use super::*;

    #[test]
    fn version_1_leaf_records_still_decode() {
        let mut put = vec![RECORD_VERSION];
        put.extend_from_slice(&42u64.to_le_bytes());
        put.extend_from_slice(&7u32.to_le_bytes());
        put.extend_from_slice(&3u16.to_le_bytes());
        put.extend_from_slice(&5u16.to_le_bytes());
        put.extend_from_slice(b"keyvalue");
        let want =
            Record::Put { pid: 42, tree_id: 7, key: b"key".to_vec(), value: b"value".to_vec() };
        assert_eq!(decode(KIND_PUT, &put), Ok(want));
        let mut delete = vec![RECORD_VERSION];
        delete.extend_from_slice(&3u64.to_le_bytes());
        delete.extend_from_slice(&2u32.to_le_bytes());
        delete.extend_from_slice(&1u16.to_le_bytes());
        delete.push(b'k');
        assert_eq!(
            decode(KIND_DELETE, &delete),
            Ok(Record::Delete { pid: 3, tree_id: 2, key: b"k".to_vec() })
        );
        // The same put now takes 12 bytes less.
        let mut now = Vec::new();
        let change = PageChange::LeafPut { tree_id: 7, key: b"key", value: b"value" };
        encode_change(42, &change, &mut now);
        assert_eq!(now.len() + 12, put.len());
        assert!(decode(KIND_PUT, &now[..now.len() - 1]).is_err());
    }

    #[test]
    fn records_round_trip_and_reject_damage() {
        let mut buf = Vec::new();
        let change = PageChange::LeafPut { tree_id: 7, key: b"key", value: b"value" };
        let kind = encode_change(42, &change, &mut buf);
        assert_eq!(
            decode(kind, &buf),
            Ok(Record::Put { pid: 42, tree_id: 7, key: b"key".to_vec(), value: b"value".to_vec() })
        );
        assert!(decode(kind, &buf[..buf.len() - 1]).is_err());
        let kind = encode_change(3, &PageChange::LeafDelete { tree_id: 2, key: b"k" }, &mut buf);
        assert_eq!(
            decode(kind, &buf),
            Ok(Record::Delete { pid: 3, tree_id: 2, key: b"k".to_vec() })
        );
        let page = [9u8; PAGE_SIZE];
        let kind = encode_change(5, &PageChange::Image { page: &page }, &mut buf);
        assert!(matches!(decode(kind, &buf), Ok(Record::Image { pid: 5, .. })));
        // A node page with an empty middle is logged without it and comes back byte for byte.
        let mut leaf = Box::new([0u8; PAGE_SIZE]);
        crate::page::format(&mut leaf, 6, crate::page::PageKind::Leaf, 1, 0);
        let entries = vec![(b"a".to_vec(), vec![1u8; 700]), (b"b".to_vec(), vec![2u8; 900])];
        crate::page::node::build(&mut leaf, &entries);
        let kind = encode_change(6, &PageChange::Image { page: &leaf[..] }, &mut buf);
        assert_eq!(kind, KIND_IMAGE_GAP);
        assert!(buf.len() < PAGE_SIZE / 2, "{} bytes", buf.len());
        assert_eq!(decode(kind, &buf), Ok(Record::Image { pid: 6, page: leaf.clone() }));
        assert!(decode(kind, &buf[..buf.len() - 1]).is_err());
        // Bounds outside the page are an error, not a panic.
        let mut bad = buf.clone();
        bad[9..11].copy_from_slice(&5000u16.to_le_bytes());
        assert!(decode(kind, &bad).is_err());
        // A gap holding stale bytes (a slot removed in place) is logged whole.
        let hole = crate::page::HEADER_BYTES + 2 * crate::page::node::SLOT_BYTES + 8;
        leaf[hole] = 1;
        assert_eq!(encode_change(6, &PageChange::Image { page: &leaf[..] }, &mut buf), KIND_IMAGE);
        let state = EngineState {
            alloc: AllocState { high_water: 10, free_head: 4, free_count: 2 },
            next_tree_id: 3,
            write_clock: 77,
        };
        encode_checkpoint(&state, &[ExtentOp::Give(4..5)], &mut buf);
        let body = CommitBody { state, folded: false, extents: vec![ExtentOp::Give(4..5)] };
        assert_eq!(decode(KIND_CHECKPOINT, &buf), Ok(Record::Checkpoint(body)));
        buf[0] = 4;
        assert!(decode(KIND_COMMIT, &buf).unwrap_err().contains("version"));
        assert!(decode(99, &[1]).is_err());
    }

    /// The record a commit of `body` logs after a state record of `prev`, decoded, applied.
    fn logged(body: &CommitBody, prev: Option<&EngineState>) -> (Vec<u8>, LoggedCommit) {
        let mut buf = Vec::new();
        encode_commit(body, prev, &mut buf);
        let Ok(Record::Commit(c)) = decode(KIND_COMMIT, &buf) else { panic!("not a commit") };
        (buf, c)
    }

    #[test]
    fn commit_records_carry_extent_changes_and_the_fields_that_changed() {
        let state = EngineState {
            alloc: AllocState { high_water: 1 << 40, free_head: 4, free_count: 2 },
            next_tree_id: 3,
            write_clock: u64::MAX,
        };
        let extents = vec![ExtentOp::Take(100..101), ExtentOp::Give(7..(1 << 33))];
        let body = CommitBody { state, folded: true, extents };
        // The first commit since the log opened carries every field.
        let (buf, c) = logged(&body, None);
        assert_eq!((c.folded, &c.extents), (true, &body.extents));
        assert_eq!(c.fields.apply(&EngineState { write_clock: 0, ..state }), Ok(state));
        // A later one only the fields that changed: here the write clock.
        let later = EngineState { write_clock: 5, ..state };
        let plain = CommitBody { state: later, folded: false, extents: Vec::new() };
        let (small, c) = logged(&plain, Some(&state));
        assert_eq!(c.fields.0, [None, None, None, None, Some(5)]);
        assert_eq!(c.fields.apply(&state), Ok(later));
        assert!(small.len() <= 5, "a commit of the clock alone takes {} bytes", small.len());
        let (_, unchanged) = logged(&plain, Some(&later));
        assert_eq!(unchanged.fields.0, [None; STATE_FIELDS]);
        let mut again = Vec::new();
        encode_logged_commit(&c, &mut again);
        assert_eq!(again, small, "a logged commit re-encodes to its bytes");
        assert!(decode(KIND_CHECKPOINT, &small).is_err(), "a checkpoint carries every field");
        // Every truncation and every flipped byte is an error or another record, never a panic.
        for n in 0..buf.len() {
            assert!(decode(KIND_COMMIT, &buf[..n]).is_err(), "cut at {n}");
            let mut bad = buf.clone();
            bad[n] ^= 0xff;
            let _ = decode(KIND_COMMIT, &bad);
        }
        let mut forged = small.clone();
        forged[2] = 0x20;
        assert!(decode(KIND_COMMIT, &forged).is_err(), "a sixth field");
    }

    #[test]
    fn commit_records_of_versions_1_and_2_still_read() {
        let s1 = EngineState {
            alloc: AllocState { high_water: 10, free_head: 4, free_count: 2 },
            next_tree_id: 3,
            write_clock: 77,
        };
        let every = StateFields(s1.fields().map(Some));
        let want = LoggedCommit { fields: every, folded: false, extents: Vec::new() };
        // Version 2: a checkpoint's body, which earlier builds wrote for commits too.
        let mut v2 = Vec::new();
        encode_checkpoint(&s1, &[], &mut v2);
        assert_eq!(decode(KIND_COMMIT, &v2), Ok(Record::Commit(want.clone())));
        // Version 1, as the first builds wrote it.
        let mut v1 = vec![1u8];
        for v in [10u64, 4, 2] {
            v1.extend_from_slice(&v.to_le_bytes());
        }
        v1.extend_from_slice(&3u32.to_le_bytes());
        v1.extend_from_slice(&77u64.to_le_bytes());
        assert_eq!(decode(KIND_COMMIT, &v1), Ok(Record::Commit(want)));
        let body = CommitBody { state: s1, folded: false, extents: Vec::new() };
        assert_eq!(decode(KIND_CHECKPOINT, &v1), Ok(Record::Checkpoint(body)));
    }

    #[test]
    fn node_rebuild_round_trips_and_redo_rebuilds_the_same_page() {
        use crate::page::{change, format, node, PageKind};
        let mut live = Box::new([0u8; PAGE_SIZE]);
        format(&mut live, 6, PageKind::Leaf, 1, 0);
        let old = vec![(b"a".to_vec(), vec![1u8; 900]), (b"c".to_vec(), vec![3u8; 900])];
        node::build(&mut live, &old);
        let before = live.clone();
        // A split keeping "a" and the new "b" (the value of "a" replaced too).
        let insert = vec![(b"b".to_vec(), vec![2u8; 900]), (b"a".to_vec(), vec![9u8; 10])];
        change::rebuild(&mut live, &insert, 2).unwrap();
        let want = vec![(b"a".to_vec(), vec![9u8; 10]), (b"b".to_vec(), vec![2u8; 900])];
        assert_eq!(node::entries(&live), want);
        let mut buf = Vec::new();
        let c = PageChange::NodeRebuild { tree_id: 1, insert: &insert, keep: 2 };
        let kind = encode_change(6, &c, &mut buf);
        assert_eq!(kind, KIND_REBUILD);
        assert!(buf.len() < 1000, "{} bytes", buf.len());
        let rec = decode(kind, &buf).unwrap();
        assert_eq!(rec, Record::Rebuild { pid: 6, tree_id: 1, insert: insert.clone(), keep: 2 });
        assert!(decode(kind, &buf[..buf.len() - 1]).is_err());
        let mut replay = before.clone();
        assert!(change::redo(&mut replay, 6, &c, 5).unwrap());
        crate::page::set_lsn(&mut live, 5);
        assert_eq!(replay[..], live[..], "redo rebuilds the page byte for byte");
        // Damage is an error, never a panic: more kept than there are, or too big to fit.
        let mut p = before.clone();
        assert!(change::rebuild(&mut p, &[], 3).is_err());
        let big = vec![(b"z".to_vec(), vec![0u8; 3000])];
        assert!(change::rebuild(&mut p, &big, 3).is_err());
    }
}
