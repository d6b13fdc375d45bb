//! Values stored out of line ("blobs"): written once, into the page store, under page ids of
//! their own, with only a small reference in the leaf and in the log.
//!
//! A database created with [`crate::Options::blob_threshold_bytes`] set keeps every value in its
//! leaves tagged (superblock flag `blobs`):
//!
//! ```text
//! stored value, inline:    [0u8][value bytes]                       (values below the threshold)
//! stored value, reference: [1u8][ver u8 = 2][first page varint][length varint][clock varint]
//!                          [seq u32][crc32c u32]     (13-40 bytes: about 19 for a 1 KB value)
//!   varints are the unsigned LEB128 of `crate::varint`, the u32s little-endian. Version 1
//!   (still read, no longer written) was fixed-width: [1u8][1u8][first u64][length u64]
//!   [seq u64][crc32c u32][clock u64], 38 bytes.
//! blob page (one per 4016 bytes of value, page ids first..first + pages):
//!   the common 80-byte page header: kind 5 (Blob), page id, tree id field = chunk index (u32),
//!   aux = seq, heap-start field = chunk bytes (u16), write history = [previous version's
//!   clock, this version's clock]; then the chunk; zeros to the page end; page checksum.
//! ```
//!
//! `seq` is unique per blob version (its low 32 bits, all a reference keeps and checks), so a
//! reader holding an old reference sees a page that a later blob reused as foreign and retries
//! its lookup; `crc32c` covers the whole value.
//!
//! **Which ids.** A blob occupies a contiguous run of page ids. The runs come from the free
//! extents of the blob space ([`BlobSpace`]), taken from the allocator's high-water mark in
//! runs of at least [`GROW_PAGES_MIN`] (a batch of its own). A batch's changes to the free
//! extents ride in its commit record (`durable::record`, TAKE / GIVE); a system tree
//! (`\0blobs`, start -> length) holds them as of its last fold, which a batch makes once
//! more changes have piled up than a checkpoint record carries ([`RECORD_CHANGES_MAX`] or
//! fewer) or the fold would outgrow the room kept for it ([`FOLD_CHANGES_MAX`]); every
//! checkpoint record carries the changes since. Blob ids never pass through the buffer pool.
//!
//! **Order.** (1) Before the writer mutex, a put takes a run and builds its pages. With a log,
//! a small blob's pages wait in the [`Stager`] until the log is about to write records (its
//! before-write hook) or enough wait, so single puts share slots; a large one, and every blob
//! without a log, goes straight to the store ([`crate::pagestore::PageStore::write_blobs`],
//! which returns once the pages and the store's map entries for them are durable). Either way
//! a blob is durable before any log record naming it can be, and before any page holding its
//! reference is written back (the write-ahead rule makes the log durable first). (2) Under the
//! mutex the batch logs the reference (a small leaf put), takes the run from the free extents
//! and gives back the run of any blob the batch replaced or deleted (both in its commit
//! record). (3) A freed run is taken again only after the commit that
//! freed it is durable; out of place its pages are then dropped from the map. So a committed
//! reference always finds its blob, and a blob no committed reference names lies in a free
//! extent: after a crash, recovery drops whatever the store still maps in free extents or
//! above the high-water mark. The value's bytes reach the device once; the log carries 38.
pub mod format;
pub mod space;
pub mod stage;

pub use format::{
    check_page_structure, decode_stored, encode_inline, BlobRef, Stored, CHUNK_BYTES, REF_BYTES_MAX,
};
pub use space::{BlobSpace, Gate, TreeOp};
pub use stage::Stager;

/// The blob space grows by at least this many page ids at a time (1 MiB of values).
pub const GROW_PAGES_MIN: u64 = 256;
/// A blob's run is looked for at most this many times, growing the space between tries.
pub const TAKE_ROUNDS_MAX: u32 = 16;
/// Free extents at the top of the ids given back to the allocator at a time.
pub const SHRINK_ROUNDS_MAX: u32 = 8;
/// Blob pages handed to the store per call: bounds the memory a large value needs.
pub const WRITE_GROUP_PAGES: usize = 64;
/// The name of the free-extent tree in the catalog (users cannot name a tree with a NUL).
pub const FREE_TREE_NAME: &str = "\0blobs";
/// With a log, blobs of at most this many pages wait in the [`Stager`] for the log's next
/// write (larger ones are written at once, in groups); a flush starts at this many waiting.
pub const STAGE_PAGES_MAX: usize = 1024;
/// A fold may make at most three tree changes for each of this many extent changes: the room
/// in the log every batch keeps for one.
pub const FOLD_CHANGES_MAX: usize = 8192;
/// A checkpoint record carries at most this many extent changes since the last fold: the
/// batch that would leave more folds. Folds that rare cancel most changes (a run freed and
/// taken again), and a fold rewrites at most every extent of the tree and of the space, so
/// while the space holds few extents this bound, not the room above, sets how often they come.
pub const RECORD_CHANGES_MAX: usize = 65_536;
/// A lookup that finds its blob replaced under it looks again, at most this many times.
pub const READ_ATTEMPTS: u32 = 16;

/// Key and value of a free-extent tree entry.
pub fn extent_entry(start: u64, len: u64) -> ([u8; 8], [u8; 8]) {
    (start.to_be_bytes(), len.to_le_bytes())
}

/// Decodes a free-extent tree entry; None for malformed bytes.
pub fn decode_extent(key: &[u8], value: &[u8]) -> Option<(u64, u64)> {
    let k: [u8; 8] = key.try_into().ok()?;
    let v: [u8; 8] = value.try_into().ok()?;
    let (start, len) = (u64::from_be_bytes(k), u64::from_le_bytes(v));
    start.checked_add(len).map(|_| (start, len))
}
