//! What was found corrupt, by structure: the superblock, the catalog, a tree, the blob space,
//! the garbage tree, the out-of-place map. Decoders below this layer that report only a
//! message still have it carried as `reason`; the structure and page around it are typed.
use thiserror::Error;

use crate::blob::format::FormatError;
use crate::db::catalog::BadEntry;
use crate::oop::free::FreePagesError;
use crate::page::change::RebuildError;
use crate::page::meta::MetaError;
use crate::page::PageId;
use crate::space::SpaceError;

#[derive(Debug, Error)]
pub enum Corruption {
    #[error("superblock (page 0) reads as zeros after repair")]
    BlankSuperblock,
    #[error("superblock (page 0): {0}")]
    Superblock(#[source] MetaError),
    #[error("superblock names unknown write mode {stored}")]
    UnknownWriteMode { stored: u8 },
    /// `tree` is the stored name, bytes that may not be UTF-8.
    #[error("catalog entry {tree:?}: {source}")]
    CatalogEntry { tree: Vec<u8>, source: BadEntry },
    #[error("catalog holds a non-UTF-8 tree name")]
    CatalogName,
    #[error("tree {tree:?} not in the catalog")]
    NotInCatalog { tree: String },
    #[error("tree {tree} is deeper than {max} levels (cycle?)")]
    TreeTooDeep { tree: u32, max: usize },
    /// A structure modification found the tree not shaped as it must be.
    #[error("tree {tree}: {what}")]
    TreeShape { tree: u32, what: &'static str },
    #[error("tree {tree}: {source}")]
    NodeRebuild { tree: u32, source: RebuildError },
    #[error("tree {tree}: a leaf scan returned keys out of order")]
    KeysOutOfOrder { tree: u32 },
    /// A descent that must end at a page (the tree's root exists) ended without one.
    #[error("a reading {op} found no page")]
    NoPage { op: &'static str },
    #[error("removing a range of tree {tree:?}: the range kept changing over {attempts} attempts")]
    RangeKeptChanging { tree: String, attempts: u32 },
    #[error("batch tree vanished")]
    BatchTreeVanished,
    /// A write closure declined (returned nothing to commit) where it may not.
    #[error("a write declined without being asked to")]
    UnaskedDecline,
    #[error("a write that may read declined")]
    ReadingWriteDeclined,
    #[error("stored value: {0}")]
    StoredValue(#[source] FormatError),
    #[error("tree {tree:?}: the blob of a key fails its checks")]
    TreeBlob { tree: String },
    #[error("a blob a snapshot reads fails its checks")]
    SnapshotBlob,
    #[error("the blob of a key fails its checks on every read")]
    KeyBlob,
    #[error("an iterator passed over more deleted keys in one step than a range can hold")]
    IteratorStalled,
    #[error("a blob operation on a database without a blob space")]
    NoBlobSpace,
    #[error("a stored blob reference does not name allocated blob pages: {reason}")]
    BlobRelease { reason: String },
    #[error("map journal record at lsn {lsn}: {reason}")]
    MapJournalRecord { lsn: u64, reason: String },
    #[error("the WAL was used before recovery finished")]
    WalBeforeRecovery,
    #[error("blob free-extent entry does not decode")]
    BlobExtent,
    #[error("blob free extents: the log and the tree disagree: {reason}")]
    BlobExtentsDisagree { reason: String },
    #[error("blob space set up twice")]
    BlobSpaceTwice,
    #[error("freeing detached pages did not end (a cycle?)")]
    GarbageCycle,
    #[error("detached page {page_id} left the garbage tree")]
    DetachedPageLeft { page_id: PageId },
    #[error("garbage entry of {key_bytes} + {value_bytes} bytes")]
    GarbageEntry { key_bytes: usize, value_bytes: usize },
    #[error("page id {page_id} is beyond the device's {pages} pages")]
    PageBeyondDevice { page_id: PageId, pages: u64 },
    /// A flush of everything left dirty pages whose changes no commit covers.
    #[error("{count} dirty pages hold uncommitted changes and cannot be flushed")]
    UncommittedDirty { count: u64 },
    /// An I/O buffer handed back with a length other than a page's.
    #[error("{buffer} buffer is not page sized")]
    BufferNotPageSized { buffer: &'static str },
    #[error("doublewrite header lists {count} pages, the area has {slots} slots")]
    DoublewriteHeader { count: u64, slots: u64 },
    #[error("doublewrite slot {slot} names page {page_id} beyond the device's {pages} pages")]
    DoublewriteSlot { slot: u64, page_id: PageId, pages: u64 },
    /// Neither snapshot area holds a valid map: why each failed, one message per area.
    #[error("no valid map snapshot: {}", areas.join("; "))]
    NoMapSnapshot { areas: Vec<String> },
    #[error("map snapshot spans {span} page ids, the device holds {pages}")]
    MapSnapshotSpan { span: u64, pages: u64 },
    #[error("map snapshot of {blocks} blocks at {offset} runs past the device")]
    MapSnapshotPastDevice { blocks: u64, offset: u64 },
    #[error(transparent)]
    FreePages(FreePagesError),
    #[error("free page {page_id} is also mapped")]
    FreePageMapped { page_id: PageId },
    #[error("page {page_id} kept moving while it was read")]
    PageKeptMoving { page_id: PageId },
    /// The space manager's snapshot or recovered map (`SpaceError::Snapshot`, `CorruptMap`).
    #[error(transparent)]
    Space(SpaceError),
    /// A dump stream that does not load (its `DumpError`, kept whole for `downcast_ref`).
    #[error(transparent)]
    Dump(Box<dyn std::error::Error + Send + Sync>),
}
