//! Page compression (000 sec. 3.1): every 4 KiB page is compressed on its own, so it can be
//! read alone, with LZ4 (000's choice) or ZSTD at a chosen level; a page that does not shrink
//! enough to save packing space is stored raw, never an error.
//!
//! ```text
//! stored page, `stored_bytes` long (the map's size field):
//!   4096 bytes: the page as it is (raw)
//!   fewer:      u8 codec (1 = LZ4 block, 2 = ZSTD frame), then the compressed bytes; it
//!               decompresses to exactly 4096 bytes, whose page checksum the reader verifies
//! ```
use crate::page::{PageBuf, PAGE_SIZE};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const TAG_LZ4: u8 = 1;
const TAG_ZSTD: u8 = 2;
/// A compressed page is kept only if it saves at least this much (one packing unit):
/// otherwise it would take a whole slot anyway.
const SAVING_MIN_BYTES: usize = 32;
/// Highest ZSTD level accepted (the library's maximum).
pub const ZSTD_LEVEL_MAX: i32 = 22;

/// How pages are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Lz4,
    Zstd {
        level: i32,
    },
    /// The device compresses (CCZNS, 002): pages go down raw with compressed writes, the sizes
    /// and offsets the device reports fill the map, reads are decompressed reads. Needs a
    /// zoned device reporting in-storage compression (oop/device_append.rs).
    Device,
}

impl Compression {
    /// `none`, `lz4`, `zstd` (level 1, as CCZNS uses), `zstd:LEVEL` (1..=22) or `device`.
    pub fn parse(text: &str) -> Result<Compression, String> {
        let parsed = match text.trim() {
            "none" => Ok(Compression::None),
            "device" => Ok(Compression::Device),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd { level: 1 }),
            other => match other.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(level)) if (1..=ZSTD_LEVEL_MAX).contains(&level) => {
                    Ok(Compression::Zstd { level })
                }
                _ => Err(format!(
                    "compression `{text}` is not none, lz4, zstd, zstd:LEVEL (1..={ZSTD_LEVEL_MAX}) or device"
                )),
            },
        };
        // The level goes to the zstd encoder, which takes 1..=22 only (the default included).
        if let Ok(Compression::Zstd { level }) = parsed {
            debug_assert!((1..=ZSTD_LEVEL_MAX).contains(&level), "zstd level {level} parsed");
        }
        parsed
    }

    pub fn name(&self) -> String {
        let name: String = match self {
            Compression::None => "none".into(),
            Compression::Lz4 => "lz4".into(),
            Compression::Zstd { level } => format!("zstd:{level}"),
            Compression::Device => "device".into(),
        };
        // Reports and tools print the name and read it back: it must parse to this codec.
        debug_assert_eq!(Compression::parse(&name).as_ref(), Ok(self), "{name} does not parse");
        name
    }

    /// The host compresses pages (LZ4 or ZSTD).
    pub fn on_host(&self) -> bool {
        // Levels come from `parse` (1..=22): the encoder refuses any other.
        debug_assert!(
            !matches!(self, Compression::Zstd { level } if !(1..=ZSTD_LEVEL_MAX).contains(level)),
            "{self:?}"
        );
        matches!(self, Compression::Lz4 | Compression::Zstd { .. })
    }
}

/// A stored page that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("stored page of {0} bytes is empty or longer than a page")]
    Size(usize),
    #[error("unknown codec tag {0}")]
    Tag(u8),
    #[error("{codec} data does not decompress to one page: {reason}")]
    Data { codec: &'static str, reason: String },
}

thread_local! {
    /// ZSTD contexts are costly to set up; one per thread and level.
    static ZSTD: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static UNZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `page` as stored with `c`: raw when `c` is None or the page does not shrink by at least 32
/// bytes. Returns None for raw (store the page itself), else the tagged compressed bytes.
pub fn encode(c: Compression, page: &PageBuf) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(PAGE_SIZE);
    out.push(0);
    match c {
        Compression::None | Compression::Device => return None,
        Compression::Lz4 => {
            out[0] = TAG_LZ4;
            out.extend_from_slice(&lz4_flex::block::compress(&page[..]));
        }
        Compression::Zstd { level } => {
            out[0] = TAG_ZSTD;
            let compressed = ZSTD.with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.as_ref().is_none_or(|(l, _)| *l != level) {
                    *slot = zstd::bulk::Compressor::new(level).ok().map(|z| (level, z));
                }
                slot.as_mut().and_then(|(_, z)| z.compress(&page[..]).ok())
            })?;
            out.extend_from_slice(&compressed);
        }
    }
    let stored = (out.len() + SAVING_MIN_BYTES <= PAGE_SIZE).then_some(out)?;
    // GC moves stored forms as they are, and reads decode them: a form that does not decode
    // back to the page would corrupt it silently (a full decompression: debug builds only).
    debug_assert!(
        {
            let mut back = [0u8; PAGE_SIZE];
            decode(&stored, &mut back).is_ok() && back == *page
        },
        "a stored form does not decode to its page"
    );
    Some(stored)
}

/// Decodes a stored page (`stored.len()` is the map's size) into `out`.
pub fn decode(stored: &[u8], out: &mut PageBuf) -> Result<(), DecodeError> {
    // On the device the tag byte alone tells the codecs apart.
    const { assert!(TAG_LZ4 != TAG_ZSTD) };
    if stored.len() == PAGE_SIZE {
        out.copy_from_slice(stored);
        return Ok(());
    }
    let (tag, data) = match stored.split_first() {
        Some((tag, data)) if stored.len() < PAGE_SIZE => (*tag, data),
        _ => return Err(DecodeError::Size(stored.len())),
    };
    let written = match tag {
        TAG_LZ4 => lz4_flex::block::decompress_into(data, &mut out[..])
            .map_err(|e| DecodeError::Data { codec: "lz4", reason: e.to_string() })?,
        TAG_ZSTD => UNZSTD
            .with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    *slot = Some(zstd::bulk::Decompressor::new()?);
                }
                match slot.as_mut() {
                    Some(z) => z.decompress_to_buffer(data, &mut out[..]),
                    None => Err(std::io::Error::other("no zstd context")),
                }
            })
            .map_err(|e| DecodeError::Data { codec: "zstd", reason: e.to_string() })?,
        other => return Err(DecodeError::Tag(other)),
    };
    if written != PAGE_SIZE {
        let codec = if tag == TAG_LZ4 { "lz4" } else { "zstd" };
        return Err(DecodeError::Data { codec, reason: format!("{written} bytes, not 4096") });
    }
    Ok(())
}

/// What the store's codec did, counted where it happens (compression runs outside the
/// store's locks, so atomics).
#[derive(Debug, Default)]
pub struct CodecCounters {
    pages_in: AtomicU64,
    bytes_stored: AtomicU64,
    compress_ns: AtomicU64,
    decompress_ns: AtomicU64,
    page_reads: AtomicU64,
    device_reads: AtomicU64,
    slot_bytes: AtomicU64,
    packed_bytes: AtomicU64,
}

/// A reading of [`CodecCounters`] (`Db::stats().out_of_place.codec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CodecStats {
    /// Pages handed to the codec, and the bytes they are stored as (a raw page: 4096).
    pub pages_in: u64,
    pub bytes_stored: u64,
    /// Time spent compressing and decompressing (the calls are CPU-bound on their thread).
    pub compress_ns: u64,
    pub decompress_ns: u64,
    /// Page reads served by the store and the device reads they took (one each when every
    /// page lies inside one slot).
    pub page_reads: u64,
    pub device_reads: u64,
    /// Slot bytes appended, and the stored page bytes in them (the rest is slack).
    pub slot_bytes: u64,
    pub packed_bytes: u64,
}

impl CodecCounters {
    /// `page` stored with `c` (see [`encode`]), counted and timed.
    pub fn encode(&self, c: Compression, page: &PageBuf) -> Option<Vec<u8>> {
        let started = Instant::now();
        let stored = encode(c, page);
        let ns = started.elapsed().as_nanos() as u64;
        self.compress_ns.fetch_add(ns, Ordering::Relaxed);
        self.pages_in.fetch_add(1, Ordering::Relaxed);
        let len = stored.as_ref().map_or(PAGE_SIZE, Vec::len) as u64;
        // A stored form is kept only when smaller than the page: the slot layout relies on it.
        debug_assert!(len <= PAGE_SIZE as u64 && len > 0, "a page stored as {len} bytes");
        self.bytes_stored.fetch_add(len, Ordering::Relaxed);
        stored
    }

    /// [`decode`], timed.
    pub fn decode(&self, stored: &[u8], out: &mut PageBuf) -> Result<(), DecodeError> {
        let started = Instant::now();
        let r = decode(stored, out);
        // A raw page (stored whole) always decodes: only compressed forms can be refused.
        debug_assert!(r.is_ok() || stored.len() != PAGE_SIZE, "a raw page refused: {r:?}");
        self.decompress_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    pub fn note_read(&self, device_reads: u64) {
        // A page lies in one slot, or crosses into the next one: never more.
        assert!((1..=2).contains(&device_reads), "a page read took {device_reads} device reads");
        self.page_reads.fetch_add(1, Ordering::Relaxed);
        self.device_reads.fetch_add(device_reads, Ordering::Relaxed);
    }

    pub fn note_slots(&self, slots: u64, packed_bytes: u64) {
        assert!(packed_bytes <= slots * PAGE_SIZE as u64);
        self.slot_bytes.fetch_add(slots * PAGE_SIZE as u64, Ordering::Relaxed);
        self.packed_bytes.fetch_add(packed_bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CodecStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let slot_bytes = get(&self.slot_bytes);
        // Slots are appended whole: their bytes count in pages.
        debug_assert!(slot_bytes.is_multiple_of(PAGE_SIZE as u64), "{slot_bytes} slot bytes");
        CodecStats {
            pages_in: get(&self.pages_in),
            bytes_stored: get(&self.bytes_stored),
            compress_ns: get(&self.compress_ns),
            decompress_ns: get(&self.decompress_ns),
            page_reads: get(&self.page_reads),
            device_reads: get(&self.device_reads),
            slot_bytes,
            packed_bytes: get(&self.packed_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn page_from(seed_bytes: &[u8], random_share: usize) -> Box<PageBuf> {
        // The first `random_share` bytes from the seed bytes (cycled), the rest zeros.
        let mut p = Box::new([0u8; PAGE_SIZE]);
        for (i, b) in p.iter_mut().take(random_share).enumerate() {
            *b = seed_bytes[i % seed_bytes.len()].wrapping_mul(31).wrapping_add(i as u8);
        }
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any page content and compressibility round-trips through every codec, and a stored
        /// page is never larger than a raw one.
        #[test]
        fn every_page_round_trips(seed in proptest::collection::vec(any::<u8>(), 1..64),
                                  share in 0usize..=PAGE_SIZE) {
            let page = page_from(&seed, share);
            for c in [Compression::None, Compression::Lz4, Compression::Zstd { level: 1 },
                      Compression::Zstd { level: 9 }] {
                let stored = encode(c, &page);
                let bytes = stored.as_deref().unwrap_or(&page[..]);
                prop_assert!(bytes.len() <= PAGE_SIZE);
                let mut back = Box::new([0u8; PAGE_SIZE]);
                decode(bytes, &mut back).unwrap();
                prop_assert_eq!(&back[..], &page[..]);
            }
        }

        /// Garbage never panics the decoder and never decodes to a page of another length.
        #[test]
        fn garbage_is_refused_or_decodes_to_a_page(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
            let mut out = Box::new([0u8; PAGE_SIZE]);
            let _ = decode(&bytes, &mut out);
        }
    }

    #[test]
    fn incompressible_pages_stay_raw_and_zero_pages_shrink() {
        let mut noise = Box::new([0u8; PAGE_SIZE]);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for b in noise.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        assert_eq!(encode(Compression::Lz4, &noise), None);
        assert_eq!(encode(Compression::Zstd { level: 3 }, &noise), None);
        let zeros = Box::new([0u8; PAGE_SIZE]);
        assert!(encode(Compression::Lz4, &zeros).is_some_and(|b| b.len() < 64));
        assert!(matches!(decode(&[9, 1, 2], &mut noise), Err(DecodeError::Tag(9))));
        assert!(matches!(decode(&[], &mut noise), Err(DecodeError::Size(0))));
    }

    #[test]
    fn names_parse_back() {
        for c in [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd { level: 7 },
            Compression::Device,
        ] {
            assert_eq!(Compression::parse(&c.name()), Ok(c));
        }
        assert_eq!(Compression::parse("zstd"), Ok(Compression::Zstd { level: 1 }));
        assert!(Compression::parse("zstd:0").is_err());
        assert!(Compression::parse("gzip").is_err());
    }
}
