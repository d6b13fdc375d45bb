//! The two on-disk encodings of out-of-line values: the stored value a leaf holds, and the
//! blob page that holds one chunk of a blob. Layouts: the module doc of [`crate::blob`].
use crate::page::{
    self, get_u16, get_u32, get_u64, put_u16, PageBuf, PageId, PageKind, HEADER_BYTES, OFF_AUX,
    OFF_HEAP_START, OFF_SLOT_COUNT, OFF_TREE_ID, PAGE_SIZE,
};
use crate::varint::{self, VARINT_BYTES_MAX};

/// Value bytes one blob page carries (the page minus the common header).
pub const CHUNK_BYTES: usize = PAGE_SIZE - HEADER_BYTES;
/// Stored-value tag: the value follows inline.
pub const TAG_INLINE: u8 = 0;
/// Stored-value tag: a [`BlobRef`] follows.
pub const TAG_BLOB: u8 = 1;
/// The first reference layout: fixed-width fields (still read, never written).
const REF_VERSION_FIXED: u8 = 1;
/// The current reference layout: varints and two fixed u32s.
const REF_VERSION: u8 = 2;
/// Bytes of a version-1 reference, tag included.
pub const REF_V1_BYTES: usize = 38;
/// Bytes a version-2 reference takes at most, tag included (three 10-byte varints).
pub const REF_BYTES_MAX: usize = 2 + 3 * VARINT_BYTES_MAX + 4 + 4;
/// The largest value a blob holds: 2^32 chunks (the chunk index is a u32).
pub const BLOB_MAX_BYTES: u64 = (u32::MAX as u64) * CHUNK_BYTES as u64;

const _: () = assert!(CHUNK_BYTES == 4016);
const _: () = assert!(REF_V1_BYTES == 1 + 1 + 8 + 8 + 8 + 4 + 8);
const _: () = assert!(REF_BYTES_MAX >= REF_V1_BYTES);

/// Where a blob lives and how to check it: a run of `pages` page ids from `first`, each page
/// stamped with `seq` (unique per blob version, so a page reused by a later blob is told
/// apart), the value's length and crc32c, and the write clock it was written at (the next
/// version's deathtime estimate starts from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRef {
    pub first: PageId,
    pub len_bytes: u64,
    pub seq: u32,
    pub crc: u32,
    pub clock: u64,
}

/// Why stored bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("stored value is empty (no tag)")]
    Empty,
    #[error("unknown stored-value tag {0}")]
    UnknownTag(u8),
    #[error("blob reference of {0} bytes (version 1 takes {REF_V1_BYTES})")]
    RefLength(usize),
    #[error("blob reference field: {0}")]
    RefField(&'static str),
    #[error("blob reference version {0}")]
    RefVersion(u8),
    #[error("blob reference of {len} bytes from page {first} overflows the page ids")]
    RefRange { first: PageId, len: u64 },
    #[error("blob page {pid}: {reason}")]
    Page { pid: PageId, reason: String },
}

/// A stored value, decoded: the value itself or where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored<'a> {
    Inline(&'a [u8]),
    Blob(BlobRef),
}

impl BlobRef {
    /// Pages the blob occupies (0 for an empty value).
    pub fn pages(&self) -> u64 {
        self.len_bytes.div_ceil(CHUNK_BYTES as u64)
    }
    /// The page-id run `first..first + pages()`.
    pub fn page_range(&self) -> std::ops::Range<PageId> {
        self.first..self.first + self.pages()
    }
    /// The current (version 2) encoding: 12-20 bytes for a value of a few KB.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(REF_BYTES_MAX);
        v.extend_from_slice(&[TAG_BLOB, REF_VERSION]);
        varint::put(&mut v, self.first);
        varint::put(&mut v, self.len_bytes);
        varint::put(&mut v, self.clock);
        v.extend_from_slice(&self.seq.to_le_bytes());
        v.extend_from_slice(&self.crc.to_le_bytes());
        debug_assert!(v.len() <= REF_BYTES_MAX, "a reference of {} bytes", v.len());
        v
    }
    fn decode(v: &[u8]) -> Result<BlobRef, FormatError> {
        let r = match v.get(1) {
            Some(&REF_VERSION) => Self::decode_v2(&v[2..])?,
            Some(&REF_VERSION_FIXED) => Self::decode_v1(v)?,
            Some(&other) => return Err(FormatError::RefVersion(other)),
            None => return Err(FormatError::RefLength(v.len())),
        };
        let range_ok = r.len_bytes <= BLOB_MAX_BYTES && r.first.checked_add(r.pages()).is_some();
        if !range_ok {
            return Err(FormatError::RefRange { first: r.first, len: r.len_bytes });
        }
        Ok(r)
    }
    /// Version 2 after its tag and version: exactly three shortest-form varints and two u32s.
    fn decode_v2(mut v: &[u8]) -> Result<BlobRef, FormatError> {
        let field = |v: &mut &[u8]| varint::take(v).map_err(FormatError::RefField);
        let (first, len_bytes, clock) = (field(&mut v)?, field(&mut v)?, field(&mut v)?);
        let Some((fixed, [])) = v.split_first_chunk::<8>() else {
            return Err(FormatError::RefField("seq and crc32c take the last 8 bytes"));
        };
        let (seq, crc) = (get_u32(fixed, 0), get_u32(fixed, 4));
        Ok(BlobRef { first, len_bytes, seq, crc, clock })
    }
    /// The version-1 layout, as databases written before version 2 hold it, with `seq_high`
    /// as the seq's upper 32 bits: what the reader's tests and fuzz seeds feed it. Never
    /// written to a database.
    pub(crate) fn encode_v1(&self, seq_high: u32) -> Vec<u8> {
        let seq = u64::from(seq_high) << 32 | u64::from(self.seq);
        let mut v = vec![TAG_BLOB, REF_VERSION_FIXED];
        for field in [self.first, self.len_bytes, seq] {
            v.extend_from_slice(&field.to_le_bytes());
        }
        v.extend_from_slice(&self.crc.to_le_bytes());
        v.extend_from_slice(&self.clock.to_le_bytes());
        debug_assert_eq!(v.len(), REF_V1_BYTES);
        v
    }
    /// Version 1, fixed-width: the seq was 64 bits, of which pages are checked on the low 32.
    fn decode_v1(v: &[u8]) -> Result<BlobRef, FormatError> {
        if v.len() != REF_V1_BYTES {
            return Err(FormatError::RefLength(v.len()));
        }
        Ok(BlobRef {
            first: get_u64(v, 2),
            len_bytes: get_u64(v, 10),
            seq: get_u64(v, 18) as u32,
            crc: get_u32(v, 26),
            clock: get_u64(v, 30),
        })
    }
}

/// The stored form of an inline value: the tag, then the value.
pub fn encode_inline(value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + 1);
    v.push(TAG_INLINE);
    v.extend_from_slice(value);
    v
}

/// Decodes a stored value (bytes from a leaf). Never panics on bytes.
pub fn decode_stored(v: &[u8]) -> Result<Stored<'_>, FormatError> {
    match v.first() {
        None => Err(FormatError::Empty),
        Some(&TAG_INLINE) => Ok(Stored::Inline(&v[1..])),
        Some(&TAG_BLOB) => BlobRef::decode(v).map(Stored::Blob),
        Some(&t) => Err(FormatError::UnknownTag(t)),
    }
}

/// Fills `p` as chunk `index` of blob `r` at page `pid`, holding `data`, and seals it. The
/// write history starts with `now` and the previous version's clock, so the placement policy
/// can estimate when this version dies from when the last one was written.
pub fn build_page(p: &mut PageBuf, pid: PageId, r: &BlobRef, index: u32, data: &[u8], now: u64) {
    assert!(data.len() <= CHUNK_BYTES && !data.is_empty());
    p.fill(0);
    page::format(p, pid, PageKind::Blob, index, u64::from(r.seq));
    put_u16(p, OFF_HEAP_START, data.len() as u16);
    if r.clock != 0 {
        page::push_write_history(p, r.clock);
    }
    page::push_write_history(p, now);
    p[HEADER_BYTES..HEADER_BYTES + data.len()].copy_from_slice(data);
    page::seal(p);
}

/// The structure check `page::verify` runs on a blob page: the data length is within the page
/// and the bytes after it are zero (so a page is one encoding of its chunk).
pub fn check_page_structure(p: &PageBuf) -> Result<(), String> {
    let len = usize::from(get_u16(p, OFF_HEAP_START));
    if len == 0 || len > CHUNK_BYTES {
        return Err(format!("blob chunk of {len} bytes"));
    }
    if get_u16(p, OFF_SLOT_COUNT) != 0 {
        return Err("blob page with slots".into());
    }
    if p[HEADER_BYTES + len..].iter().any(|b| *b != 0) {
        return Err("blob page has bytes past its chunk".into());
    }
    Ok(())
}

/// The chunk of a verified page, after checking that it is chunk `index` of blob `r` and as
/// long as that chunk must be (a page of another blob, or of a later version that reused the
/// page id, is refused).
pub fn chunk<'a>(p: &'a PageBuf, r: &BlobRef, index: u64) -> Result<&'a [u8], FormatError> {
    let pid = page::page_id(p);
    let bad = |reason: String| FormatError::Page { pid, reason };
    // The low 32 bits: a version-1 reference's pages carry a 64-bit seq in the same field.
    let seq = get_u64(p, OFF_AUX) as u32;
    if seq != r.seq {
        return Err(bad(format!("belongs to blob {seq:#x}, not {:#x}", r.seq)));
    }
    if u64::from(get_u32(p, OFF_TREE_ID)) != index {
        return Err(bad(format!("is chunk {}, expected {index}", get_u32(p, OFF_TREE_ID))));
    }
    if index >= r.pages() {
        return Err(bad(format!("chunk {index} of a blob of {} pages", r.pages())));
    }
    let want = (r.len_bytes - index * CHUNK_BYTES as u64).min(CHUNK_BYTES as u64) as usize;
    let len = usize::from(get_u16(p, OFF_HEAP_START));
    if len != want {
        return Err(bad(format!("holds {len} bytes, expected {want}")));
    }
    Ok(&p[HEADER_BYTES..HEADER_BYTES + len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::put_u64;

    fn sample() -> BlobRef {
        BlobRef { first: 900, len_bytes: 9000, seq: 0xfeed, crc: 7, clock: 3 }
    }

    #[test]
    fn reference_round_trips_and_refuses_bad_bytes() {
        let r = sample();
        let v = r.encode();
        assert_eq!(decode_stored(&v), Ok(Stored::Blob(r)));
        assert_eq!(v.len(), 2 + 2 + 2 + 1 + 8, "a few KB's reference is small");
        assert_eq!(r.pages(), 3);
        for cut in 1..v.len() {
            assert!(decode_stored(&v[..cut]).is_err(), "cut to {cut} bytes");
        }
        assert!(decode_stored(&[&v[..], &[0]].concat()).is_err(), "a trailing byte");
        let mut w = v.clone();
        w[1] = 9;
        assert_eq!(decode_stored(&w), Err(FormatError::RefVersion(9)));
        let huge = BlobRef { first: u64::MAX - 1, ..r }.encode();
        assert!(matches!(decode_stored(&huge), Err(FormatError::RefRange { .. })));
        let widest = BlobRef { first: 1, len_bytes: BLOB_MAX_BYTES, clock: u64::MAX, ..r };
        assert!(widest.encode().len() <= REF_BYTES_MAX);
        assert_eq!(decode_stored(&[]), Err(FormatError::Empty));
        assert_eq!(decode_stored(&[7]), Err(FormatError::UnknownTag(7)));
        assert_eq!(decode_stored(&encode_inline(b"ab")), Ok(Stored::Inline(b"ab")));
    }

    #[test]
    fn version_1_references_still_read_and_check_their_pages_on_the_low_seq() {
        let r = sample();
        let v1 = r.encode_v1(0xabcd);
        assert_eq!(v1.len(), REF_V1_BYTES);
        assert_eq!(decode_stored(&v1), Ok(Stored::Blob(r)));
        assert_eq!(decode_stored(&v1[..20]), Err(FormatError::RefLength(20)));
        // A page written under version 1 carries the whole 64-bit seq.
        let mut p = [0u8; PAGE_SIZE];
        let data = vec![5u8; 9000 - 2 * CHUNK_BYTES];
        build_page(&mut p, 902, &r, 2, &data, 10);
        put_u64(&mut p, OFF_AUX, 0xabcd << 32 | u64::from(r.seq));
        page::seal(&mut p);
        assert_eq!(chunk(&p, &r, 2).unwrap(), &data[..]);
    }

    #[test]
    fn pages_verify_and_name_their_blob_and_chunk() {
        let r = sample();
        let mut p = [0u8; PAGE_SIZE];
        let data = vec![5u8; 9000 - 2 * CHUNK_BYTES];
        build_page(&mut p, 902, &r, 2, &data, 10);
        assert_eq!(page::verify(&p, 902), Ok(PageKind::Blob));
        assert_eq!(chunk(&p, &r, 2).unwrap(), &data[..]);
        assert!(chunk(&p, &r, 1).is_err(), "wrong index");
        assert!(chunk(&p, &BlobRef { seq: 1, ..r }, 2).is_err(), "another blob");
        assert_eq!(page::write_history(&p)[2..], [3, 10]);
        let mut q = p;
        q[PAGE_SIZE - 1] = 1;
        page::seal(&mut q);
        assert!(page::verify(&q, 902).is_err(), "bytes past the chunk");
    }
}
