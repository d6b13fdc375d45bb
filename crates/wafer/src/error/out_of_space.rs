//! Why a write found no room: the store's size, the file's growth limit, the blob page ids, or
//! the space manager's zones. Every case is a clean refusal; the database stays usable.
use thiserror::Error;

use crate::device::DeviceError;
use crate::space::SpaceError;

#[derive(Debug, Error)]
pub enum OutOfSpaceError {
    /// The allocator was set up without growth (a device of fixed size).
    #[error("the store does not grow")]
    NoGrowth,
    #[error("{needed_pages} pages needed, {held_pages} held: this store does not grow")]
    FixedSize { needed_pages: u64, held_pages: u64 },
    #[error("{needed_pages} pages needed, the file may hold {max_pages} (max_file_bytes)")]
    FileLimit { needed_pages: u64, max_pages: u64 },
    /// The allocator ran out of free pages and could not grow: `cause` says why not.
    #[error(
        "device full: {needed_pages} pages needed, {free_pages} free of {capacity_pages} ({cause})"
    )]
    DeviceFull {
        needed_pages: u64,
        free_pages: u64,
        capacity_pages: u64,
        cause: Box<OutOfSpaceError>,
    },
    #[error(
        "blob space: {needed_pages} contiguous page ids needed, {left_pages} left above the high \
         water"
    )]
    BlobPageIds { needed_pages: u64, left_pages: u64 },
    #[error(
        "blob space: no run of {pages} pages after {rounds} grows (concurrent writers took them)"
    )]
    BlobRun { pages: u64, rounds: u32 },
    #[error("{pages} pages exceed the page table")]
    PageTable { pages: u64 },
    #[error("{pages} pages overflow a file")]
    FileOverflow { pages: u64 },
    /// The device refused to grow: a full filesystem, or a device of fixed size.
    #[error("the data file cannot grow to {bytes} bytes: {source}")]
    FileGrowth { bytes: u64, source: DeviceError },
    #[error(
        "{needed_pages} pages needed, {held_pages} held: the out-of-place layout was made for a \
         file that does not grow (set max_file_bytes when creating the database)"
    )]
    LayoutFixed { needed_pages: u64, held_pages: u64 },
    #[error(
        "{needed_pages} pages needed; the file may hold {max_bytes} bytes (max_file_bytes at \
         creation)"
    )]
    LayoutLimit { needed_pages: u64, max_bytes: u64 },
    /// The space manager's refusal (`OutOfSpace`, `NeedsGc`, `AwaitingDurability`).
    #[error(transparent)]
    Space(SpaceError),
}
