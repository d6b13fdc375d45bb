//! The two on-disk encodings of out-of-line values: the stored value a leaf holds, and the
//! blob page that holds one chunk of a blob. Layouts: the module doc of [`crate::blob`].
use crate::page::{
    self, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, PageBuf, PageId, PageKind,
    HEADER_BYTES, OFF_AUX, OFF_HEAP_START, OFF_SLOT_COUNT, OFF_TREE_ID, PAGE_SIZE,
};

/// Value bytes one blob page carries (the page minus the common header).
pub const CHUNK_BYTES: usize = PAGE_SIZE - HEADER_BYTES;
/// Stored-value tag: the value follows inline.
pub const TAG_INLINE: u8 = 0;
/// Stored-value tag: a [`BlobRef`] follows.
pub const TAG_BLOB: u8 = 1;
const REF_VERSION: u8 = 1;
/// Bytes of a stored reference, tag included.
pub const REF_BYTES: usize = 38;
/// The largest value a blob holds: 2^32 chunks (the chunk index is a u32).
pub const BLOB_MAX_BYTES: u64 = (u32::MAX as u64) * CHUNK_BYTES as u64;

const _: () = assert!(CHUNK_BYTES == 4016);
const _: () = assert!(REF_BYTES == 1 + 1 + 8 + 8 + 8 + 4 + 8);

/// Where a blob lives and how to check it: a run of `pages` page ids from `first`, each page
/// stamped with `seq` (unique per blob version, so a page reused by a later blob is told
/// apart), the value's length and crc32c, and the write clock it was written at (the next
/// version's deathtime estimate starts from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRef {
    pub first: PageId,
    pub len_bytes: u64,
    pub seq: u64,
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
    #[error("blob reference of {0} bytes (expected {REF_BYTES})")]
    RefLength(usize),
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
    pub fn encode(&self) -> [u8; REF_BYTES] {
        let mut v = [0u8; REF_BYTES];
        v[0] = TAG_BLOB;
        v[1] = REF_VERSION;
        put_u64(&mut v, 2, self.first);
        put_u64(&mut v, 10, self.len_bytes);
        put_u64(&mut v, 18, self.seq);
        put_u32(&mut v, 26, self.crc);
        put_u64(&mut v, 30, self.clock);
        v
    }
    fn decode(v: &[u8]) -> Result<BlobRef, FormatError> {
        if v.len() != REF_BYTES {
            return Err(FormatError::RefLength(v.len()));
        }
        if v[1] != REF_VERSION {
            return Err(FormatError::RefVersion(v[1]));
        }
        let r = BlobRef {
            first: get_u64(v, 2),
            len_bytes: get_u64(v, 10),
            seq: get_u64(v, 18),
            crc: get_u32(v, 26),
            clock: get_u64(v, 30),
        };
        let range_ok = r.len_bytes <= BLOB_MAX_BYTES && r.first.checked_add(r.pages()).is_some();
        if !range_ok {
            return Err(FormatError::RefRange { first: r.first, len: r.len_bytes });
        }
        Ok(r)
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
    page::format(p, pid, PageKind::Blob, index, r.seq);
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
    if get_u64(p, OFF_AUX) != r.seq {
        return Err(bad(format!("belongs to blob {:#x}, not {:#x}", get_u64(p, OFF_AUX), r.seq)));
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

    fn sample() -> BlobRef {
        BlobRef { first: 900, len_bytes: 9000, seq: 0xfeed, crc: 7, clock: 3 }
    }

    #[test]
    fn reference_round_trips_and_refuses_bad_bytes() {
        let r = sample();
        let v = r.encode();
        assert_eq!(decode_stored(&v), Ok(Stored::Blob(r)));
        assert_eq!(r.pages(), 3);
        assert_eq!(decode_stored(&v[..10]), Err(FormatError::RefLength(10)));
        let mut w = v;
        w[1] = 9;
        assert_eq!(decode_stored(&w), Err(FormatError::RefVersion(9)));
        let huge = BlobRef { first: u64::MAX - 1, ..r }.encode();
        assert!(matches!(decode_stored(&huge), Err(FormatError::RefRange { .. })));
        assert_eq!(decode_stored(&[]), Err(FormatError::Empty));
        assert_eq!(decode_stored(&[7]), Err(FormatError::UnknownTag(7)));
        assert_eq!(decode_stored(&encode_inline(b"ab")), Ok(Stored::Inline(b"ab")));
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
