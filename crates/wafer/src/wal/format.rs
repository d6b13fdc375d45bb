//! On-device encodings of the WAL: the header block, the log block header and the record header.
//!
//! Every field is little-endian at a fixed offset; every structure carries a crc32c. The byte
//! diagrams are in docs/internals/wal.md. Decoding never panics on device bytes: it returns
//! what it found so the reader can tell "never written" from "torn" from "someone else's bytes".
use crate::device::BLOCK_BYTES;
use crate::le::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// Bytes of one log or header block (the device I/O unit).
pub const BLOCK: usize = BLOCK_BYTES as usize;
/// Header blocks at the start of the device: two copies written alternately, so a torn header
/// write always leaves the previous header intact.
pub const HEADER_BLOCKS: u64 = 2;
/// Bytes of the log block header at the start of every log block.
pub const BLOCK_HEADER_BYTES: usize = 40;
/// Record bytes one log block carries.
pub const BLOCK_DATA_BYTES: usize = BLOCK - BLOCK_HEADER_BYTES;
/// Bytes of the record header in front of every payload the log writes now
/// ([`RecordFormat::Compact`]).
pub const RECORD_HEADER_BYTES: usize = 9;
/// Bytes of the record header of [`RecordFormat::Wide`] blocks (earlier builds), the longest.
pub const WIDE_RECORD_HEADER_BYTES: usize = 20;
/// Largest payload the reader accepts, whatever the writer's options were (sanity bound on a
/// length read from the device before its checksum can be checked).
pub const MAX_RECORD_PAYLOAD_BYTES: usize = 64 << 20;

pub const HEADER_MAGIC: [u8; 8] = *b"WAFERWAL";
/// "WLB2" little-endian: marks a log block whose records have compact headers.
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"WLB2");
/// "WLB1": a log block of an earlier build, whose records have wide headers (still read).
pub const BLOCK_MAGIC_WIDE: u32 = u32::from_le_bytes(*b"WLB1");
pub const VERSION: u32 = 1;
/// Bytes of the header block covered by its checksum; the rest of the block is zero.
const HEADER_BYTES: usize = 80;

const _: () = assert!(BLOCK_DATA_BYTES < u16::MAX as usize);
const _: () = assert!(BLOCK.is_power_of_two());
const _: () = assert!(HEADER_BYTES <= BLOCK);
const _: () = assert!(RECORD_HEADER_BYTES < WIDE_RECORD_HEADER_BYTES);

/// How the records of a log block frame their payloads, told by the block's magic. An
/// incarnation of the log writes one format, and its first record starts a fresh block, so a
/// record never spans blocks of two formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    /// 20-byte headers that repeat the record's own LSN (blocks of earlier builds): the block
    /// header's position and lap checks already pin every record, so the copy bought nothing.
    Wide,
    /// 9-byte headers: checksum, length, kind. What the log writes.
    Compact,
}

impl RecordFormat {
    pub const fn header_bytes(self) -> usize {
        match self {
            RecordFormat::Wide => WIDE_RECORD_HEADER_BYTES,
            RecordFormat::Compact => RECORD_HEADER_BYTES,
        }
    }

    const fn magic(self) -> u32 {
        match self {
            RecordFormat::Wide => BLOCK_MAGIC_WIDE,
            RecordFormat::Compact => BLOCK_MAGIC,
        }
    }

    fn of_magic(magic: u32) -> Option<RecordFormat> {
        match magic {
            BLOCK_MAGIC => Some(RecordFormat::Compact),
            BLOCK_MAGIC_WIDE => Some(RecordFormat::Wide),
            _ => None,
        }
    }
}

/// The WAL header, stored twice (blocks 0 and 1); the valid copy with the highest `seq` wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Incremented on every header write; picks the newer of the two copies.
    pub seq: u64,
    /// Random identity chosen at format time: blocks of an earlier format never pass for ours.
    pub log_id: u64,
    /// Incarnation: bumped (and made durable) by every open before the first append, so blocks a
    /// crashed incarnation left behind the recovered end are recognisable as stale.
    pub epoch: u32,
    /// Largest flush (in blocks) any incarnation issues: bounds the torn window at the tail.
    pub max_flush_blocks: u32,
    /// First block of the log area (after the header blocks).
    pub area_start_block: u64,
    /// Blocks in the circular log area.
    pub area_blocks: u64,
    /// Oldest retained position: the log holds `start_lsn..end`; everything before was truncated.
    pub start_lsn: u64,
}

/// What a header block turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderRead {
    Valid(Header),
    /// All zeros: never written.
    Zero,
    /// Not our magic: not a WAL (or overwritten by something else).
    BadMagic,
    /// Our magic but the checksum fails: a torn header write or damage.
    BadChecksum,
    /// A valid header of another format version.
    Version(u32),
}

/// Header block layout (offsets in bytes):
/// 0 crc32c(4..80) u32 | 4 magic [8] | 12 version u32 | 16 seq u64 | 24 log_id u64 | 32 epoch u32
/// | 36 max_flush_blocks u32 | 40 area_start_block u64 | 48 area_blocks u64 | 56 start_lsn u64
/// | 64 block_bytes u32 | 68..80 reserved (zero) | 80..4096 zero
pub fn encode_header(h: &Header, block: &mut [u8]) {
    assert_eq!(block.len(), BLOCK);
    block.fill(0);
    block[4..12].copy_from_slice(&HEADER_MAGIC);
    put_u32(block, 12, VERSION);
    put_u64(block, 16, h.seq);
    put_u64(block, 24, h.log_id);
    put_u32(block, 32, h.epoch);
    put_u32(block, 36, h.max_flush_blocks);
    put_u64(block, 40, h.area_start_block);
    put_u64(block, 48, h.area_blocks);
    put_u64(block, 56, h.start_lsn);
    put_u32(block, 64, BLOCK as u32);
    let crc = crc32c::crc32c(&block[4..HEADER_BYTES]);
    put_u32(block, 0, crc);
}

pub fn decode_header(block: &[u8]) -> HeaderRead {
    assert_eq!(block.len(), BLOCK);
    if block.iter().all(|b| *b == 0) {
        return HeaderRead::Zero;
    }
    if block[4..12] != HEADER_MAGIC {
        return HeaderRead::BadMagic;
    }
    if crc32c::crc32c(&block[4..HEADER_BYTES]) != get_u32(block, 0) {
        return HeaderRead::BadChecksum;
    }
    let version = get_u32(block, 12);
    if version != VERSION || get_u32(block, 64) != BLOCK as u32 {
        return HeaderRead::Version(version);
    }
    HeaderRead::Valid(Header {
        seq: get_u64(block, 16),
        log_id: get_u64(block, 24),
        epoch: get_u32(block, 32),
        max_flush_blocks: get_u32(block, 36),
        area_start_block: get_u64(block, 40),
        area_blocks: get_u64(block, 48),
        start_lsn: get_u64(block, 56),
    })
}

/// The header at the start of every log block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub log_id: u64,
    /// Stream position of the block's first byte: `block_index * 4096`. Tells laps apart.
    pub block_lsn: u64,
    /// Block-aligned position up to which the log was written *and synced* when this block was
    /// written. A damaged block below a valid block's `synced_lsn` was durable: corruption.
    pub synced_lsn: u64,
    pub epoch: u32,
    /// End of record bytes in this block (`BLOCK_HEADER_BYTES..=BLOCK`); the rest is padding.
    pub used: u16,
    /// Bytes at the start of the data area that continue a record begun in an earlier block.
    pub carry: u16,
    /// How its records are framed (its magic).
    pub format: RecordFormat,
}

/// Log block header layout (offsets in bytes):
/// 0 crc32c(4..4096) u32 | 4 magic u32 ("WLB2", or "WLB1": [`RecordFormat`]) | 8 log_id u64 | 16 block_lsn u64 | 24 synced_lsn u64
/// | 32 epoch u32 | 36 used u16 | 38 carry u16 | 40.. record bytes, then zero padding
pub fn encode_block_header(h: &BlockHeader, block: &mut [u8]) {
    assert_eq!(block.len(), BLOCK);
    assert!(h.used as usize >= BLOCK_HEADER_BYTES && h.used as usize <= BLOCK);
    assert!(h.carry as usize <= h.used as usize - BLOCK_HEADER_BYTES);
    assert!(h.block_lsn.is_multiple_of(BLOCK as u64));
    assert!(h.synced_lsn <= h.block_lsn);
    put_u32(block, 4, h.format.magic());
    put_u64(block, 8, h.log_id);
    put_u64(block, 16, h.block_lsn);
    put_u64(block, 24, h.synced_lsn);
    put_u32(block, 32, h.epoch);
    put_u16(block, 36, h.used);
    put_u16(block, 38, h.carry);
}

/// Seals a block: zeroes the padding after `used` and stores the checksum over the whole block.
pub fn seal_block(block: &mut [u8]) {
    assert_eq!(block.len(), BLOCK);
    let used = get_u16(block, 36) as usize;
    assert!((BLOCK_HEADER_BYTES..=BLOCK).contains(&used));
    block[used..].fill(0);
    let crc = crc32c::crc32c(&block[4..]);
    put_u32(block, 0, crc);
}

/// The `carry` field of a block being filled (set when the block is opened, before sealing).
pub fn put_block_carry(block: &mut [u8], carry: u16) {
    assert_eq!(block.len(), BLOCK);
    assert!(carry as usize <= BLOCK_DATA_BYTES);
    put_u16(block, 38, carry);
}

pub fn block_carry(block: &[u8]) -> u16 {
    get_u16(block, 38)
}

/// The `used` field of a block being filled: blocks are full (`BLOCK`) unless a flush closes
/// them early.
pub fn put_block_used(block: &mut [u8], used: usize) {
    assert_eq!(block.len(), BLOCK);
    assert!((BLOCK_HEADER_BYTES..=BLOCK).contains(&used));
    put_u16(block, 36, used as u16);
}

pub fn block_used(block: &[u8]) -> usize {
    get_u16(block, 36) as usize
}

/// What a log block turned out to be, checked against the block the reader expects there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRead {
    Valid(BlockHeader),
    /// All zeros: never written (or trimmed).
    Zero,
    /// Checksum mismatch: a torn write, or damage.
    Torn,
    /// Intact, but another log's (other log_id or magic).
    Foreign,
    /// Intact and ours, but of another lap (`block_lsn` is not the expected one).
    Stale {
        block_lsn: u64,
    },
    /// Intact, ours, the expected position, but its fields contradict the format: a writer bug
    /// or damage that happened to keep the checksum (reported as corruption).
    Invalid(&'static str),
}

pub fn decode_block(block: &[u8], log_id: u64, expected_lsn: u64) -> BlockRead {
    assert_eq!(block.len(), BLOCK);
    if crc32c::crc32c(&block[4..]) != get_u32(block, 0) {
        if block.iter().all(|b| *b == 0) {
            return BlockRead::Zero;
        }
        return BlockRead::Torn;
    }
    let format = RecordFormat::of_magic(get_u32(block, 4));
    let Some(format) = format.filter(|_| get_u64(block, 8) == log_id) else {
        return BlockRead::Foreign;
    };
    let h = BlockHeader {
        log_id,
        block_lsn: get_u64(block, 16),
        synced_lsn: get_u64(block, 24),
        epoch: get_u32(block, 32),
        used: get_u16(block, 36),
        carry: get_u16(block, 38),
        format,
    };
    if h.block_lsn != expected_lsn {
        return BlockRead::Stale { block_lsn: h.block_lsn };
    }
    let used = h.used as usize;
    if !(BLOCK_HEADER_BYTES..=BLOCK).contains(&used) {
        return BlockRead::Invalid("used bytes out of range");
    }
    if h.carry as usize > used - BLOCK_HEADER_BYTES {
        return BlockRead::Invalid("carry exceeds used bytes");
    }
    if h.synced_lsn > h.block_lsn {
        return BlockRead::Invalid("synced_lsn beyond the block itself");
    }
    BlockRead::Valid(h)
}

/// The record header in front of every payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub crc: u32,
    pub len: u32,
    /// The record's own position, which wide headers repeat (`None` in a compact header).
    pub lsn: Option<u64>,
    pub kind: u8,
}

/// Record header layouts (offsets in bytes; a record may span blocks):
/// - compact: 0 crc32c(bytes 4..9 of the header, then the payload) u32 | 4 payload length u32
///   | 8 kind u8 | 9.. payload
/// - wide (read only): 0 crc32c(bytes 4..20, then the payload) u32 | 4 payload length u32
///   | 8 lsn u64 (its own position) | 16 kind u8 | 17..20 reserved (zero) | 20.. payload
///
/// Writes a header of `format` for `payload` at `lsn` into `out` (its header's length).
pub fn encode_record_header(
    format: RecordFormat,
    lsn: u64,
    kind: u8,
    payload: &[u8],
    out: &mut [u8],
) {
    assert_eq!(out.len(), format.header_bytes());
    assert!(payload.len() <= MAX_RECORD_PAYLOAD_BYTES);
    out.fill(0);
    put_u32(out, 4, payload.len() as u32);
    match format {
        RecordFormat::Compact => out[8] = kind,
        RecordFormat::Wide => {
            put_u64(out, 8, lsn);
            out[16] = kind;
        }
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[4..]), payload);
    put_u32(out, 0, crc);
}

/// Reads a header of `format` (`bytes` is exactly its length).
pub fn decode_record_header(format: RecordFormat, bytes: &[u8]) -> RecordHeader {
    assert_eq!(bytes.len(), format.header_bytes());
    let (crc, len) = (get_u32(bytes, 0), get_u32(bytes, 4));
    match format {
        RecordFormat::Compact => RecordHeader { crc, len, lsn: None, kind: bytes[8] },
        RecordFormat::Wide => {
            RecordHeader { crc, len, lsn: Some(get_u64(bytes, 8)), kind: bytes[16] }
        }
    }
}

/// Checks a whole record (header bytes + payload) against its header checksum.
pub fn record_checksum_ok(format: RecordFormat, header_bytes: &[u8], payload: &[u8]) -> bool {
    assert_eq!(header_bytes.len(), format.header_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&header_bytes[4..]), payload);
    let reserved_zero = format == RecordFormat::Compact || header_bytes[17..20] == [0, 0, 0];
    crc == get_u32(header_bytes, 0) && reserved_zero
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            seq: 7,
            log_id: 0xdead_beef,
            epoch: 3,
            max_flush_blocks: 64,
            area_start_block: HEADER_BLOCKS,
            area_blocks: 1000,
            start_lsn: 4096 * 5 + 100,
        }
    }

    #[test]
    fn header_round_trip_and_damage() {
        let mut b = vec![0u8; BLOCK];
        assert_eq!(decode_header(&b), HeaderRead::Zero);
        encode_header(&header(), &mut b);
        assert_eq!(decode_header(&b), HeaderRead::Valid(header()));
        b[60] ^= 1;
        assert_eq!(decode_header(&b), HeaderRead::BadChecksum);
        b[5] ^= 1;
        assert_eq!(decode_header(&b), HeaderRead::BadMagic);
        encode_header(&header(), &mut b);
        put_u32(&mut b, 12, VERSION + 1);
        let crc = crc32c::crc32c(&b[4..HEADER_BYTES]);
        put_u32(&mut b, 0, crc);
        assert_eq!(decode_header(&b), HeaderRead::Version(VERSION + 1));
    }

    #[test]
    fn block_round_trip_and_classification() {
        let h = BlockHeader {
            log_id: 9,
            block_lsn: 4096 * 12,
            synced_lsn: 4096 * 10,
            epoch: 2,
            used: 1000,
            carry: 17,
            format: RecordFormat::Compact,
        };
        let mut b = vec![0xAAu8; BLOCK];
        encode_block_header(&h, &mut b);
        seal_block(&mut b);
        assert!(b[1000..].iter().all(|x| *x == 0), "padding is zeroed");
        assert_eq!(decode_block(&b, 9, h.block_lsn), BlockRead::Valid(h));
        assert_eq!(decode_block(&b, 8, h.block_lsn), BlockRead::Foreign);
        assert_eq!(
            decode_block(&b, 9, h.block_lsn + 4096 * 100),
            BlockRead::Stale { block_lsn: h.block_lsn }
        );
        // A torn write at 512-byte granularity: the second sector is from an older write.
        b[512..1024].fill(0x55);
        assert_eq!(decode_block(&b, 9, h.block_lsn), BlockRead::Torn);
        assert_eq!(decode_block(&[0u8; BLOCK], 9, 0), BlockRead::Zero);
        // A block of an earlier build keeps its own framing.
        let wide = BlockHeader { format: RecordFormat::Wide, ..h };
        encode_block_header(&wide, &mut b);
        seal_block(&mut b);
        assert_eq!(decode_block(&b, 9, h.block_lsn), BlockRead::Valid(wide));
    }

    #[test]
    fn record_header_round_trip() {
        let payload = b"hello redo";
        for format in [RecordFormat::Compact, RecordFormat::Wide] {
            let mut hb = vec![0u8; format.header_bytes()];
            encode_record_header(format, 4136, 5, payload, &mut hb);
            let h = decode_record_header(format, &hb);
            let lsn = (format == RecordFormat::Wide).then_some(4136);
            assert_eq!((h.len, h.lsn, h.kind), (payload.len() as u32, lsn, 5));
            assert!(record_checksum_ok(format, &hb, payload));
            assert!(!record_checksum_ok(format, &hb, b"hello redO"));
            hb[5] ^= 1;
            assert!(!record_checksum_ok(format, &hb, payload), "the length is covered");
        }
    }
}
