//! Checkpoint snapshot of the page map: explicit little-endian 4 KiB blocks, each with magic,
//! version, kind, index, count, payload length, a crc32c and the snapshot's LSN, so a large map
//! is written as many blocks, any damaged block is detected on its own, and a block left over
//! from the area's previous snapshot is refused. Decoding never panics on bytes.
//!
//! ```text
//! every block (4096 bytes):
//!   0  u32 magic "WMAP" (0x50414d57 LE)    4  u16 version (4; 3     6  u16 kind (0 header,
//!                                              still read)               1 entries, 2 NoWA spans,
//!                                                                        3 packed entries)
//!   8  u32 block_index                     12 u32 block_count     16 u32 payload_len
//!   20 u32 crc32c of the block with these 4 bytes zeroed
//!   24 u64 snapshot LSN (the header's; every block of one snapshot carries the same)
//!   32 payload (4064 bytes, zero tail)
//! header payload (block 0, 56 bytes; 48 in version 3, which ends before `packed_bytes`):
//!   0 u64 lsn   8 u64 pid_span   16 u64 mapped_count   24 u32 zone_count   28 u32 slots_per_zone
//!   32 u64 NoWA stream slots (u64::MAX: NoWA off)   40 u32 NoWA span count   44 u32 zero
//!   48 u64 packed_bytes (0: the entries are in entries blocks)
//! entries payload (blocks 1.., when packed_bytes is 0): packed locations (u64, map.rs) of page
//!   ids (block_index - 1) * 508 .. , 508 per block, UNMAPPED for none; the last may be short.
//! packed entries (blocks 1.., when packed_bytes is not 0): one zstd frame of packed_bytes,
//!   4064 bytes a block (the last may be short), holding the same pid_span entries as byte
//!   planes: byte 0 of every entry, then byte 1 of every entry, ... byte 7. A location's high
//!   bytes (its zone) and its low ones (its size) each take a few values across the map, which
//!   a plane lays side by side: about 3.5 bytes an entry instead of 8 on a map of blob pages.
//!   Written only when it takes fewer blocks than the entries blocks would.
//! NoWA payload (the blocks after the entries, 203 spans each, the last may be short): per
//!   zone holding data, by increasing zone id: u32 zone, u64 first unit, u64 last unit
//!   (space/nowa.rs: the SSD units its current incarnation spans).
//! ```
//! The LSN in every block is what makes a torn snapshot detectable: a snapshot overwrites the
//! older of two areas, and a power cut can keep some of its blocks and lose others; without the
//! LSN a kept new header with an old entries block decodes as a valid map that points into
//! zones reset since (the compressed crash test found it, seed 10, under background
//! write-back). Versions 1 and 2 (no LSN in each block) are refused with `BadVersion`.
use super::error::SnapshotError;
use super::map::{Location, PageMap, PAGE_ID_LIMIT, UNMAPPED};
use super::zone::Lsn;
use crate::le::{get_u16 as u16_at, get_u32 as u32_at, get_u64 as u64_at};

pub const BLOCK_BYTES: usize = 4096;
pub const MAGIC: u32 = u32::from_le_bytes(*b"WMAP");
pub const VERSION: u16 = 4;
/// Snapshots of earlier builds: no packed entries, a 48-byte header payload.
const VERSION_UNPACKED: u16 = 3;
const KIND_HEADER: u16 = 0;
const KIND_ENTRIES: u16 = 1;
const KIND_NOWA: u16 = 2;
const KIND_PACKED: u16 = 3;
/// zstd's level for packed entries: its default, a few milliseconds for a map of 200k pages.
const PACK_LEVEL: i32 = 3;
/// Bytes of one NoWA span record.
const SPAN_BYTES: usize = 20;
/// NoWA span records per block.
pub const SPANS_PER_BLOCK: usize = PAYLOAD_BYTES / SPAN_BYTES;
/// The header's NoWA stream field when NoWA is off.
const NOWA_OFF: u64 = u64::MAX;
const HEAD_BYTES: usize = 32;
const PAYLOAD_BYTES: usize = BLOCK_BYTES - HEAD_BYTES;
/// Page-map entries per entries block.
pub const ENTRIES_PER_BLOCK: usize = PAYLOAD_BYTES / 8;
// The layout docs/internals/space.md and the module comment give: pinned.
const _: () = assert!(ENTRIES_PER_BLOCK == 508 && SPANS_PER_BLOCK == 203);
const _: () = assert!(LSN_AT + 8 == HEAD_BYTES && CRC_AT + 4 == LSN_AT);
const HEADER_PAYLOAD_BYTES: usize = 56;
const HEADER_PAYLOAD_BYTES_UNPACKED: usize = 48;
const CRC_AT: usize = 20;
const LSN_AT: usize = 24;

/// What the header block says; enough for a reader to know how many blocks follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Checkpoint LSN: the map reflects every record up to here; replay starts after it.
    pub lsn: Lsn,
    pub pid_span: u64,
    pub mapped_count: u64,
    pub zone_count: u32,
    pub slots_per_zone: u32,
    pub block_count: u32,
    /// NoWA's stream position, when NoWA was on.
    pub nowa_stream_slots: Option<u64>,
    pub nowa_span_count: u32,
    /// Bytes of the packed entries' zstd frame; 0 when the entries are in entries blocks.
    pub packed_bytes: u64,
    /// The format version every block of the snapshot carries.
    pub version: u16,
}

/// NoWA's model as a snapshot keeps it: the stream position and each zone's span of units.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoWaSnapshot {
    pub stream_slots: u64,
    /// (zone, first unit, last unit), by increasing zone.
    pub spans: Vec<(u32, u64, u64)>,
}

/// A decoded snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSnapshot {
    pub header: SnapshotHeader,
    pub map: PageMap,
    pub nowa: Option<NoWaSnapshot>,
}

/// Blocks a snapshot of a map spanning `pid_span` page ids takes, without NoWA blocks.
pub fn block_count(pid_span: u64) -> u64 {
    let entry_blocks = pid_span.div_ceil(ENTRIES_PER_BLOCK as u64);
    // Snapshot areas are sized by this: the entries blocks hold the span, with none to spare.
    debug_assert!(
        entry_blocks.saturating_mul(ENTRIES_PER_BLOCK as u64) >= pid_span
            && (entry_blocks == 0 || (entry_blocks - 1) * (ENTRIES_PER_BLOCK as u64) < pid_span),
        "{entry_blocks} entries blocks for {pid_span} page ids"
    );
    1 + entry_blocks
}

/// Blocks NoWA's spans take for `zones` zones holding data.
pub fn nowa_block_count(zones: u64) -> u64 {
    let blocks = zones.div_ceil(SPANS_PER_BLOCK as u64);
    // Every zone's span has a record in them.
    debug_assert!(
        blocks.saturating_mul(SPANS_PER_BLOCK as u64) >= zones,
        "{blocks} NoWA blocks for {zones} zones"
    );
    blocks
}

/// Encodes `map` at checkpoint `lsn` for a data area of `zone_count` x `slots_per_zone`, with
/// NoWA's model when NoWA is on. Never more blocks than [`block_count`] and
/// [`nowa_block_count`] give, which size the snapshot areas.
pub fn encode(
    map: &PageMap,
    lsn: Lsn,
    zone_count: u32,
    slots_per_zone: u32,
    nowa: Option<&NoWaSnapshot>,
) -> Vec<u8> {
    let out = encode_as(map, lsn, (zone_count, slots_per_zone), nowa, true);
    // The snapshot areas are sized by these counts: a longer snapshot would overrun its area.
    let spans = nowa.map_or(0, |n| nowa_block_count(n.spans.len() as u64));
    let blocks_max = block_count(map.pid_span()) + spans;
    debug_assert!(out.len() as u64 <= blocks_max * BLOCK_BYTES as u64, "{} bytes", out.len());
    out
}

/// [`encode`], packing the entries only when `pack` says so (tests cover both layouts).
fn encode_as(
    map: &PageMap,
    lsn: Lsn,
    (zone_count, slots_per_zone): (u32, u32),
    nowa: Option<&NoWaSnapshot>,
    pack: bool,
) -> Vec<u8> {
    let entries = map.raw_entries();
    let raw_blocks = block_count(entries.len() as u64) - 1;
    let packed = pack
        .then(|| pack_entries(entries))
        .flatten()
        .filter(|p| packed_block_count(p.len()) < raw_blocks);
    let entry_blocks = packed.as_ref().map_or(raw_blocks, |p| packed_block_count(p.len()));
    let spans = nowa.map_or(&[][..], |n| &n.spans[..]);
    assert!(spans.len() <= zone_count as usize, "more spans than zones");
    let blocks = 1 + entry_blocks + nowa_block_count(spans.len() as u64);
    assert!(blocks <= u64::from(u32::MAX), "map too large for one snapshot");
    let blocks = blocks as u32;
    let mut out = vec![0u8; blocks as usize * BLOCK_BYTES];
    let packed_bytes = packed.as_ref().map_or(0, |p| p.len() as u64);
    let header = header_payload(map, lsn, (zone_count, slots_per_zone), nowa, packed_bytes);
    let mut chunks = out.chunks_exact_mut(BLOCK_BYTES);
    if let Some(block) = chunks.next() {
        seal(block, KIND_HEADER, 0, blocks, lsn, &header);
    }
    let mut index = 1u32;
    // Entries first in each zip: a zip pulls its first iterator before it finds the second
    // exhausted, and the blocks must not lose one to that.
    match &packed {
        Some(frame) => {
            for (part, block) in frame.chunks(PAYLOAD_BYTES).zip(chunks.by_ref()) {
                seal(block, KIND_PACKED, index, blocks, lsn, part);
                index += 1;
            }
        }
        None => {
            for (part, block) in entries.chunks(ENTRIES_PER_BLOCK).zip(chunks.by_ref()) {
                let mut payload = [0u8; PAYLOAD_BYTES];
                for (j, raw) in part.iter().enumerate() {
                    payload[j * 8..j * 8 + 8].copy_from_slice(&raw.to_le_bytes());
                }
                seal(block, KIND_ENTRIES, index, blocks, lsn, &payload[..part.len() * 8]);
                index += 1;
            }
        }
    }
    assert_eq!(u64::from(index), 1 + entry_blocks, "every entries block sealed");
    for (part, block) in spans.chunks(SPANS_PER_BLOCK).zip(chunks) {
        let mut payload = [0u8; PAYLOAD_BYTES];
        for (j, (zone, first, last)) in part.iter().enumerate() {
            let at = j * SPAN_BYTES;
            payload[at..at + 4].copy_from_slice(&zone.to_le_bytes());
            payload[at + 4..at + 12].copy_from_slice(&first.to_le_bytes());
            payload[at + 12..at + 20].copy_from_slice(&last.to_le_bytes());
        }
        seal(block, KIND_NOWA, index, blocks, lsn, &payload[..part.len() * SPAN_BYTES]);
        index += 1;
    }
    assert_eq!(index, blocks, "every block sealed");
    out
}

/// The header block's payload (layout in the module comment).
fn header_payload(
    map: &PageMap,
    lsn: Lsn,
    (zone_count, slots_per_zone): (u32, u32),
    nowa: Option<&NoWaSnapshot>,
    packed_bytes: u64,
) -> [u8; HEADER_PAYLOAD_BYTES] {
    let spans = nowa.map_or(0, |n| n.spans.len());
    let mut header = [0u8; HEADER_PAYLOAD_BYTES];
    header[0..8].copy_from_slice(&lsn.to_le_bytes());
    header[8..16].copy_from_slice(&(map.raw_entries().len() as u64).to_le_bytes());
    header[16..24].copy_from_slice(&map.mapped_count().to_le_bytes());
    header[24..28].copy_from_slice(&zone_count.to_le_bytes());
    header[28..32].copy_from_slice(&slots_per_zone.to_le_bytes());
    let stream = nowa.map_or(NOWA_OFF, |n| n.stream_slots);
    assert_ne!(nowa.map(|n| n.stream_slots), Some(NOWA_OFF), "stream position overflow");
    header[32..40].copy_from_slice(&stream.to_le_bytes());
    header[40..44].copy_from_slice(&(spans as u32).to_le_bytes());
    header[48..56].copy_from_slice(&packed_bytes.to_le_bytes());
    header
}

/// Blocks a packed-entries frame of `bytes` takes.
fn packed_block_count(bytes: usize) -> u64 {
    let blocks = bytes.div_ceil(PAYLOAD_BYTES);
    // The frame's blocks hold it, the last one not empty (`read_entries` expects a short tail).
    debug_assert!(
        blocks.saturating_mul(PAYLOAD_BYTES) >= bytes
            && (blocks == 0 || (blocks - 1) * PAYLOAD_BYTES < bytes),
        "{blocks} blocks for a frame of {bytes} bytes"
    );
    blocks as u64
}

/// The entries as byte planes in one zstd frame (None when zstd fails, which it does only
/// when out of memory: the entries blocks then serve).
fn pack_entries(entries: &[u64]) -> Option<Vec<u8>> {
    if entries.is_empty() {
        return None;
    }
    let mut planes = vec![0u8; entries.len() * 8];
    for (i, raw) in entries.iter().enumerate() {
        for (byte, value) in raw.to_le_bytes().into_iter().enumerate() {
            planes[byte * entries.len() + i] = value;
        }
    }
    let frame = zstd::bulk::compress(&planes, PACK_LEVEL).ok();
    // What the snapshot keeps instead of the entries must give them back (O(n): debug only).
    debug_assert!(
        frame.as_ref().is_none_or(|f| unpack_entries(f, entries.len()).as_deref() == Ok(entries)),
        "packed entries do not round-trip"
    );
    frame
}

/// The entries a packed frame holds, `span` of them; never panics on bytes. Reads the frame as
/// a stream, so what a forged span makes it allocate is bounded by what the frame really holds.
fn unpack_entries(frame: &[u8], span: usize) -> Result<Vec<u64>, SnapshotError> {
    use std::io::Read;
    let bad = |reason| SnapshotError::BadHeader { reason };
    let decoder =
        zstd::stream::read::Decoder::new(frame).map_err(|_| bad("packed entries unreadable"))?;
    let mut planes = Vec::new();
    let limit = (span as u64).saturating_mul(8).saturating_add(1);
    decoder
        .take(limit)
        .read_to_end(&mut planes)
        .map_err(|_| bad("packed entries do not decompress"))?;
    if planes.len() as u64 != span as u64 * 8 {
        return Err(bad("packed entries hold another number of entries than the page id span"));
    }
    let mut entries = vec![0u64; span];
    // Checked length: exactly one plane per byte of an entry, so no byte is left out.
    debug_assert!(
        span == 0 || planes.chunks_exact(span).count() == 8,
        "{} plane bytes for {span} entries",
        planes.len()
    );
    for (byte, plane) in planes.chunks_exact(span.max(1)).enumerate().take(8) {
        for (entry, value) in entries.iter_mut().zip(plane) {
            *entry |= u64::from(*value) << (8 * byte);
        }
    }
    Ok(entries)
}

fn seal(block: &mut [u8], kind: u16, index: u32, count: u32, lsn: Lsn, payload: &[u8]) {
    assert_eq!(block.len(), BLOCK_BYTES);
    assert!(payload.len() <= PAYLOAD_BYTES);
    block[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    block[4..6].copy_from_slice(&VERSION.to_le_bytes());
    block[6..8].copy_from_slice(&kind.to_le_bytes());
    block[8..12].copy_from_slice(&index.to_le_bytes());
    block[12..16].copy_from_slice(&count.to_le_bytes());
    block[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    block[LSN_AT..LSN_AT + 8].copy_from_slice(&lsn.to_le_bytes());
    block[HEAD_BYTES..HEAD_BYTES + payload.len()].copy_from_slice(payload);
    let crc = block_crc(block);
    block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

fn block_crc(block: &[u8]) -> u32 {
    // Callers check the length first (`seal`, `open_block`): the crc field lies inside.
    debug_assert_eq!(block.len(), BLOCK_BYTES, "crc of a block of {} bytes", block.len());
    let crc = crc32c::crc32c(&block[..CRC_AT]);
    let crc = crc32c::crc32c_append(crc, &[0u8; 4]);
    crc32c::crc32c_append(crc, &block[CRC_AT + 4..])
}

/// One block's frame, checked.
struct Block<'a> {
    kind: u16,
    version: u16,
    block_count: u32,
    payload: &'a [u8],
}

/// Checks one block's frame: magic, checksum, version, index, and that it belongs to the
/// snapshot at `lsn` (None for the header block, which names the LSN).
fn open_block(block: &[u8], index: u32, lsn: Option<Lsn>) -> Result<Block<'_>, SnapshotError> {
    assert_eq!(block.len(), BLOCK_BYTES);
    if u32_at(block, 0) != MAGIC {
        return Err(SnapshotError::BadMagic { block: index });
    }
    if block_crc(block) != u32_at(block, CRC_AT) {
        return Err(SnapshotError::BadChecksum { block: index });
    }
    let version = u16_at(block, 4);
    if version != VERSION && version != VERSION_UNPACKED {
        return Err(SnapshotError::BadVersion { block: index, version });
    }
    if u32_at(block, 8) != index {
        return Err(SnapshotError::BadBlock { block: index, reason: "block index out of order" });
    }
    let payload_len = u32_at(block, 16) as usize;
    if payload_len > PAYLOAD_BYTES {
        return Err(SnapshotError::BadBlock { block: index, reason: "payload length too large" });
    }
    let found = u64_at(block, LSN_AT);
    if let Some(expected) = lsn.filter(|l| *l != found) {
        return Err(SnapshotError::ForeignBlock { block: index, lsn: found, expected });
    }
    Ok(Block {
        kind: u16_at(block, 6),
        version,
        block_count: u32_at(block, 12),
        payload: &block[HEAD_BYTES..HEAD_BYTES + payload_len],
    })
}

/// Reads the header block (the first 4096 bytes of a snapshot).
pub fn decode_header(block: &[u8]) -> Result<SnapshotHeader, SnapshotError> {
    if block.len() != BLOCK_BYTES {
        return Err(SnapshotError::BadLength { len: block.len() });
    }
    let Block { kind, version, block_count: block_count_found, payload } =
        open_block(block, 0, None)?;
    if kind != KIND_HEADER {
        return Err(SnapshotError::BadBlock { block: 0, reason: "first block is not a header" });
    }
    let payload_bytes = match version {
        VERSION_UNPACKED => HEADER_PAYLOAD_BYTES_UNPACKED,
        _ => HEADER_PAYLOAD_BYTES,
    };
    if payload.len() != payload_bytes {
        return Err(SnapshotError::BadHeader { reason: "header payload length" });
    }
    let header = SnapshotHeader {
        lsn: u64_at(payload, 0),
        pid_span: u64_at(payload, 8),
        mapped_count: u64_at(payload, 16),
        zone_count: u32_at(payload, 24),
        slots_per_zone: u32_at(payload, 28),
        block_count: block_count_found,
        nowa_stream_slots: Some(u64_at(payload, 32)).filter(|s| *s != NOWA_OFF),
        nowa_span_count: u32_at(payload, 40),
        packed_bytes: if version == VERSION_UNPACKED { 0 } else { u64_at(payload, 48) },
        version,
    };
    if u64_at(block, LSN_AT) != header.lsn {
        return Err(SnapshotError::BadHeader {
            reason: "the block's LSN differs from the header's",
        });
    }
    if header.nowa_span_count > header.zone_count {
        return Err(SnapshotError::BadHeader { reason: "more NoWA spans than zones" });
    }
    if header.nowa_stream_slots.is_none() && header.nowa_span_count > 0 {
        return Err(SnapshotError::BadHeader { reason: "NoWA spans with NoWA off" });
    }
    if header.pid_span > PAGE_ID_LIMIT {
        return Err(SnapshotError::BadHeader { reason: "page id span beyond the limit" });
    }
    if header.mapped_count > header.pid_span {
        return Err(SnapshotError::BadHeader { reason: "more mapped pages than page ids" });
    }
    let expected_blocks =
        1 + entry_block_count(&header) + nowa_block_count(u64::from(header.nowa_span_count));
    if u64::from(header.block_count) != expected_blocks {
        return Err(SnapshotError::BadHeader {
            reason: "block count does not match the page id span",
        });
    }
    // What `decode` relies on, all refused above otherwise: the header block counts itself,
    // and the entries it announces fit the span.
    debug_assert!(
        header.block_count >= 1 && header.mapped_count <= header.pid_span,
        "{header:?} passed the checks"
    );
    Ok(header)
}

/// Blocks after the header that hold the entries, packed or not.
fn entry_block_count(header: &SnapshotHeader) -> u64 {
    // Called only on a header whose span `decode_header` checked: `block_count` cannot wrap.
    debug_assert!(header.pid_span <= PAGE_ID_LIMIT, "unchecked span {}", header.pid_span);
    match header.packed_bytes {
        0 => block_count(header.pid_span) - 1,
        // Bounded by PAGE_ID_LIMIT through the span check: no overflow on usize.
        bytes => packed_block_count(bytes.min(u64::from(u32::MAX) * BLOCK_BYTES as u64) as usize),
    }
}

/// Decodes a whole snapshot for a data area of `zone_count` x `slots_per_zone` (or one taken
/// when the area had fewer zones).
pub fn decode(
    bytes: &[u8],
    zone_count: u32,
    slots_per_zone: u32,
) -> Result<MapSnapshot, SnapshotError> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(BLOCK_BYTES) {
        return Err(SnapshotError::BadLength { len: bytes.len() });
    }
    let header = decode_header(&bytes[..BLOCK_BYTES])?;
    if bytes.len() / BLOCK_BYTES != header.block_count as usize {
        return Err(SnapshotError::BadLength { len: bytes.len() });
    }
    // A data area that grew since the snapshot (a file that grows adds zones at its end)
    // reads it: its locations are checked against the zones it was taken with.
    if header.zone_count > zone_count || header.slots_per_zone != slots_per_zone {
        return Err(SnapshotError::GeometryMismatch {
            found_zone_count: header.zone_count,
            found_slots_per_zone: header.slots_per_zone,
            zone_count,
            slots_per_zone,
        });
    }
    let entries = read_entries(bytes, &header)?;
    let mut mapped = 0u64;
    for (pid, raw) in entries.iter().enumerate() {
        if *raw != UNMAPPED {
            match Location::unpack(*raw) {
                Some(loc) if loc.zone < header.zone_count && loc.slots().end <= slots_per_zone => {
                    mapped += 1
                }
                _ => return Err(SnapshotError::BadLocation { pid: pid as u64, raw: *raw }),
            }
        }
    }
    if mapped != header.mapped_count {
        return Err(SnapshotError::MappedCountMismatch {
            expected: header.mapped_count,
            found: mapped,
        });
    }
    let entry_blocks = 1 + entry_block_count(&header) as usize;
    let nowa = match header.nowa_stream_slots {
        None => None,
        Some(stream_slots) => {
            Some(NoWaSnapshot { stream_slots, spans: decode_spans(bytes, &header, entry_blocks)? })
        }
    };
    let map = PageMap::from_raw_entries(entries);
    // The map counts its own mapped entries: the same ones the checks above counted.
    debug_assert_eq!(map.mapped_count(), mapped, "mapped entries recounted");
    Ok(MapSnapshot { header, map, nowa })
}

/// Opens entries block `index` of the snapshot `header` describes, checking its kind and that
/// it is of the header's snapshot.
fn open_entries_block<'a>(
    block: &'a [u8],
    index: u32,
    header: &SnapshotHeader,
    kind: u16,
) -> Result<&'a [u8], SnapshotError> {
    let found = open_block(block, index, Some(header.lsn))?;
    if found.kind != kind {
        return Err(SnapshotError::BadBlock { block: index, reason: "not an entries block" });
    }
    if found.block_count != header.block_count {
        return Err(SnapshotError::BadBlock {
            block: index,
            reason: "block count differs from the header",
        });
    }
    if found.version != header.version {
        return Err(SnapshotError::BadBlock { block: index, reason: "block of another version" });
    }
    // Entries follow the header (callers skip block 0); `open_block` bounded the payload.
    debug_assert!(
        index >= 1 && found.payload.len() <= PAYLOAD_BYTES,
        "entries block {index} of {} bytes",
        found.payload.len()
    );
    Ok(found.payload)
}

/// The page-map entries of a snapshot whose blocks are `bytes`, packed or not, `pid_span` of
/// them (their locations not yet checked).
fn read_entries(bytes: &[u8], header: &SnapshotHeader) -> Result<Vec<u64>, SnapshotError> {
    // The span is bounded by the input length (checked through the block count), or for packed
    // entries by what the frame decompresses to (`unpack_entries`).
    let span = header.pid_span as usize;
    let entry_blocks = 1 + entry_block_count(header) as usize;
    let blocks = bytes.chunks_exact(BLOCK_BYTES).enumerate().take(entry_blocks).skip(1);
    if header.packed_bytes != 0 {
        let mut frame = Vec::with_capacity(header.packed_bytes as usize);
        for (i, block) in blocks {
            let payload = open_entries_block(block, i as u32, header, KIND_PACKED)?;
            let expected = (header.packed_bytes as usize - frame.len()).min(PAYLOAD_BYTES);
            if payload.len() != expected {
                let reason = "packed entries payload length";
                return Err(SnapshotError::BadBlock { block: i as u32, reason });
            }
            frame.extend_from_slice(payload);
        }
        let entries = unpack_entries(&frame, span)?;
        // As the unpacked path below: one entry per page id of the span, for `decode` to check.
        debug_assert_eq!(entries.len(), span, "packed entries of another span");
        return Ok(entries);
    }
    let mut entries = Vec::with_capacity(span);
    for (i, block) in blocks {
        let payload = open_entries_block(block, i as u32, header, KIND_ENTRIES)?;
        let expected = (span - entries.len()).min(ENTRIES_PER_BLOCK);
        if payload.len() != expected * 8 {
            let reason = "entries payload length";
            return Err(SnapshotError::BadBlock { block: i as u32, reason });
        }
        entries.extend(payload.chunks_exact(8).map(|c| u64_at(c, 0)));
    }
    if entries.len() != span {
        return Err(SnapshotError::BadHeader { reason: "fewer entries than the page id span" });
    }
    Ok(entries)
}

/// The NoWA blocks after the entries: spans by increasing zone, each within the area.
fn decode_spans(
    bytes: &[u8],
    header: &SnapshotHeader,
    entry_blocks: usize,
) -> Result<Vec<(u32, u64, u64)>, SnapshotError> {
    // `decode` reads spans only with NoWA on, after the header and at least its own block.
    debug_assert!(
        entry_blocks >= 1 && header.nowa_stream_slots.is_some(),
        "NoWA spans read after {entry_blocks} blocks of {header:?}"
    );
    let count = header.nowa_span_count as usize;
    let mut spans: Vec<(u32, u64, u64)> = Vec::with_capacity(count);
    for (i, block) in bytes.chunks_exact(BLOCK_BYTES).enumerate().skip(entry_blocks) {
        let index = i as u32;
        let Block { kind, version, block_count: blocks, payload } =
            open_block(block, index, Some(header.lsn))?;
        if kind != KIND_NOWA || blocks != header.block_count || version != header.version {
            return Err(SnapshotError::BadBlock { block: index, reason: "not a NoWA block" });
        }
        let expected = (count - spans.len()).min(SPANS_PER_BLOCK);
        if payload.len() != expected * SPAN_BYTES {
            return Err(SnapshotError::BadBlock { block: index, reason: "NoWA payload length" });
        }
        for record in payload.chunks_exact(SPAN_BYTES) {
            let span = (u32_at(record, 0), u64_at(record, 4), u64_at(record, 12));
            let ordered = spans.last().is_none_or(|prev| prev.0 < span.0);
            if span.0 >= header.zone_count || span.1 > span.2 || !ordered {
                return Err(SnapshotError::BadBlock { block: index, reason: "bad NoWA span" });
            }
            spans.push(span);
        }
    }
    if spans.len() != count {
        return Err(SnapshotError::BadHeader { reason: "fewer NoWA spans than counted" });
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_map(pids: u64) -> PageMap {
        let mut map = PageMap::new();
        for pid in (0..pids).filter(|p| p % 3 != 1) {
            map.set(
                pid,
                Location::new((pid % 7) as u32, (pid / 7) as u32, 4096 - (pid % 5) as u16),
            );
        }
        map
    }

    fn sample_nowa(zones: u32) -> NoWaSnapshot {
        let spans = (0..zones).filter(|z| z % 3 != 2).map(|z| (z, u64::from(z), u64::from(z) + 1));
        NoWaSnapshot { stream_slots: 4096 * 9, spans: spans.collect() }
    }

    /// NoWA's spans after the entries: none, one block, several blocks (203 a block).
    /// A snapshot as written with its entries packed or not: the size check and the layout.
    fn encode_both(
        map: &PageMap,
        lsn: Lsn,
        zones: u32,
        nowa: Option<&NoWaSnapshot>,
    ) -> [Vec<u8>; 2] {
        let raw = encode_as(map, lsn, (zones, 1024), nowa, false);
        let packed = encode_as(map, lsn, (zones, 1024), nowa, true);
        assert!(packed.len() <= raw.len(), "packing never takes more blocks");
        assert_eq!(packed, encode(map, lsn, zones, 1024, nowa));
        [raw, packed]
    }

    #[test]
    fn nowa_spans_round_trip() {
        for zones in [0u32, 1, 203, 204, 700] {
            let nowa = sample_nowa(zones);
            // sample_map names zones 0..7.
            let zone_count = zones.max(8);
            let [raw, packed] = encode_both(&sample_map(600), 3, zone_count, Some(&nowa));
            let expected = block_count(600) + nowa_block_count(nowa.spans.len() as u64);
            assert_eq!(raw.len() as u64, expected * 4096);
            for bytes in [raw, packed] {
                let snap = decode(&bytes, zone_count, 1024).unwrap();
                assert_eq!(snap.nowa.as_ref(), Some(&nowa), "zones {zones}");
                assert_eq!(snap.map, sample_map(600));
            }
        }
    }

    #[test]
    fn round_trip_of_empty_small_and_multi_block_maps() {
        for pids in [0, 1, 507, 508, 509, 2000, 7000] {
            let map = sample_map(pids);
            let [raw, packed] = encode_both(&map, 77, 8, None);
            assert_eq!(raw.len() as u64, block_count(map.pid_span()) * 4096);
            if pids >= 2000 {
                assert!(packed.len() < raw.len() / 2, "pids {pids}: {} bytes", packed.len());
            }
            for bytes in [raw, packed] {
                let snap = decode(&bytes, 8, 1024).unwrap();
                assert_eq!(snap.map, map, "pids {pids}");
                assert_eq!(snap.nowa, None);
                assert_eq!(snap.header.lsn, 77);
                assert_eq!(decode_header(&bytes[..4096]).unwrap(), snap.header);
            }
        }
    }

    /// Snapshots of earlier builds (version 3: entries blocks only, a 48-byte header payload)
    /// still decode, and a block of the other version inside one is refused.
    #[test]
    fn version_3_snapshots_still_decode() {
        let map = sample_map(1200);
        let [mut bytes, _] = encode_both(&map, 5, 8, Some(&sample_nowa(8)));
        let count = (bytes.len() / BLOCK_BYTES) as u32;
        let mut header = [0u8; HEADER_PAYLOAD_BYTES_UNPACKED];
        header.copy_from_slice(&bytes[HEAD_BYTES..HEAD_BYTES + HEADER_PAYLOAD_BYTES_UNPACKED]);
        seal(&mut bytes[..BLOCK_BYTES], KIND_HEADER, 0, count, 5, &header);
        for (i, block) in bytes.chunks_exact_mut(BLOCK_BYTES).enumerate() {
            block[4..6].copy_from_slice(&VERSION_UNPACKED.to_le_bytes());
            let crc = block_crc(block);
            block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            assert_eq!(open_block(block, i as u32, Some(5)).map(|b| b.version), Ok(3));
        }
        let snap = decode(&bytes, 8, 1024).unwrap();
        assert_eq!((snap.map, snap.header.version), (map, 3));
        let block = &mut bytes[BLOCK_BYTES..2 * BLOCK_BYTES];
        block[4..6].copy_from_slice(&VERSION.to_le_bytes());
        let crc = block_crc(block);
        block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(decode(&bytes, 8, 1024), Err(SnapshotError::BadBlock { block: 1, .. })));
    }

    /// Every single-byte corruption of a snapshot is a typed error, never a panic or a silently
    /// different map.
    #[test]
    fn every_flipped_byte_is_detected() {
        let map = sample_map(600); // two entries blocks
        for bytes in encode_both(&map, 5, 8, Some(&sample_nowa(8))) {
            for at in 0..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut bad = bytes.clone();
                    bad[at] ^= flip;
                    let r = decode(&bad, 8, 1024);
                    assert!(r.is_err(), "byte {at} ^ {flip:#x} went unnoticed");
                }
            }
        }
    }

    #[test]
    fn truncation_reordering_and_foreign_geometry_are_refused() {
        let bytes = encode_as(&sample_map(1200), 5, (8, 1024), None, false);
        assert!(matches!(
            decode(&bytes[..4096 * 2], 8, 1024),
            Err(SnapshotError::BadLength { .. })
        ));
        assert!(matches!(decode(&bytes[..100], 8, 1024), Err(SnapshotError::BadLength { .. })));
        assert!(matches!(decode(&[], 8, 1024), Err(SnapshotError::BadLength { .. })));
        let mut swapped = bytes.clone();
        let (a, b) = swapped.split_at_mut(8192);
        a[4096..].swap_with_slice(&mut b[..4096]);
        assert!(matches!(decode(&swapped, 8, 1024), Err(SnapshotError::BadBlock { block: 1, .. })));
        assert!(matches!(decode(&bytes, 7, 1024), Err(SnapshotError::GeometryMismatch { .. })));
        assert!(matches!(decode(&bytes, 8, 512), Err(SnapshotError::GeometryMismatch { .. })));
        assert!(decode(&bytes, 9, 1024).is_ok(), "an area that grew reads its older snapshot");
        // A map valid for 8 zones names zones beyond a 4-zone area: refused even with the
        // geometry fields forged to match (re-sealed header).
        let mut forged = bytes.clone();
        let mut header = [0u8; HEADER_PAYLOAD_BYTES];
        header.copy_from_slice(&forged[HEAD_BYTES..HEAD_BYTES + HEADER_PAYLOAD_BYTES]);
        header[24..28].copy_from_slice(&4u32.to_le_bytes());
        seal(&mut forged[..4096], KIND_HEADER, 0, block_count(1200) as u32, 5, &header);
        assert!(matches!(decode(&forged, 4, 1024), Err(SnapshotError::BadLocation { .. })));
    }

    /// A power cut during a snapshot can keep some of its blocks and lose others, leaving the
    /// area's previous snapshot in them: every mix of the two is refused, never decoded as a
    /// map (the previous snapshot's entries point into zones reset since).
    #[test]
    fn a_torn_snapshot_mixing_two_snapshots_is_refused() {
        let nowa = sample_nowa(8);
        for pack in [false, true] {
            let mut new_map = sample_map(1200);
            new_map.set(3, Location::new(6, 1, 823));
            torn_mixes_are_refused(&sample_map(1200), &new_map, &nowa, pack);
        }
    }

    fn torn_mixes_are_refused(
        old_map: &PageMap,
        new_map: &PageMap,
        nowa: &NoWaSnapshot,
        pack: bool,
    ) {
        let old = encode_as(old_map, 5, (8, 1024), Some(nowa), pack);
        let new = encode_as(new_map, 9, (8, 1024), Some(nowa), pack);
        assert_eq!(old.len(), new.len());
        let blocks = old.len() / BLOCK_BYTES;
        assert!(blocks >= 3, "header, entries blocks and a NoWA block");
        // Each block from either snapshot (bit b of `mix`: block b from the new one).
        for mix in 1u32..(1 << blocks) - 1 {
            let mut torn = old.clone();
            for b in (0..blocks).filter(|b| mix & (1 << b) != 0) {
                let range = b * BLOCK_BYTES..(b + 1) * BLOCK_BYTES;
                torn[range.clone()].copy_from_slice(&new[range]);
            }
            let r = decode(&torn, 8, 1024);
            assert!(
                matches!(r, Err(SnapshotError::ForeignBlock { .. })),
                "blocks {mix:#b} from the new snapshot: {r:?}"
            );
        }
        assert_eq!(&decode(&new, 8, 1024).unwrap().map, new_map);
    }

    /// An older version's blocks (no LSN in each) are refused by version, not misread.
    #[test]
    fn version_2_snapshots_are_refused() {
        let mut bytes = encode(&sample_map(10), 5, 8, 1024, None);
        let block = &mut bytes[..4096];
        block[4..6].copy_from_slice(&2u16.to_le_bytes());
        let crc = block_crc(block);
        block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            decode(&bytes, 8, 1024),
            Err(SnapshotError::BadVersion { block: 0, version: 2 })
        ));
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = crate::rng::SplitMix64::new(0xBAD5EED);
        let valid = encode(&sample_map(100), 1, 8, 1024, Some(&sample_nowa(5)));
        for _ in 0..2000 {
            let mut b = valid.clone();
            let n = 1 + rng.below(8) as usize;
            for _ in 0..n {
                let at = rng.below(b.len() as u64) as usize;
                b[at] = rng.next_u64() as u8;
            }
            let _ = decode(&b, 8, 1024);
        }
    }
}
