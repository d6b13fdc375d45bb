//! The superblock (page 0): what a reopen needs to find everything else.
use super::{
    get_u32, get_u64, put_u32, put_u64, PageBuf, PageId, PageKind, FORMAT_VERSION, OFF_CHECKSUM,
    OFF_KIND, OFF_VERSION, PAGE_SIZE,
};

/// Why page 0 is not a superblock this build reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("bad magic: not a wafer database")]
    BadMagic,
    #[error("superblock checksum mismatch")]
    Checksum,
    #[error("superblock format version {0} unsupported")]
    Version(u8),
    #[error("page size {0} (this build uses {PAGE_SIZE})")]
    PageSize(u32),
    #[error("superblock {flag} flag {value} unknown")]
    Flag { flag: &'static str, value: u8 },
    /// The fields decode but contradict each other (`Meta::is_sane`).
    #[error("superblock fields inconsistent: {0:?}")]
    Inconsistent(Box<Meta>),
}

pub const META_PAGE_ID: PageId = 0;
pub const MAGIC: u64 = u64::from_le_bytes(*b"WAFERDB\0");

// Field offsets; bytes 0..6 share the layout of the common page header.
const OFF_MAGIC: usize = 8;
const OFF_PAGE_SIZE: usize = 16; // u32
const OFF_WRITE_MODE: usize = 20; // u8: WriteMode (0 in place, 1 out of place)
const OFF_WAL: usize = 21; // u8, 1 = the database keeps a WAL (redo from checkpoint_lsn)
const OFF_BLOBS: usize = 22; // u8, 1 = values are tagged and may live out of line (crate::blob)
const OFF_CATALOG_ROOT: usize = 24;
const OFF_HIGH_WATER: usize = 32;
const OFF_FREE_HEAD: usize = 40;
const OFF_FREE_COUNT: usize = 48;
const OFF_LAST_LSN: usize = 56;
const OFF_NEXT_TREE_ID: usize = 64; // u32
const OFF_PAGE_CAPACITY: usize = 72;
const OFF_WRITE_CLOCK: usize = 80;
const OFF_CHECKPOINT_LSN: usize = 88;
/// Out of place with a file that grows: the size its layout was made for (0: the device's).
/// Databases written before the field read 0 there, which is what they mean.
const OFF_LAYOUT_BYTES: usize = 96;
pub const META_BYTES: usize = 104;
const _: () = assert!(OFF_MAGIC == 8 && META_BYTES == OFF_LAYOUT_BYTES + 8);
// A superblock written in place must not tear: its fields stay inside one 512-byte sector.
const _: () = assert!(META_BYTES <= 512);
const _: () = assert!(META_BYTES <= PAGE_SIZE);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub write_mode: u8,
    pub catalog_root: PageId,
    /// Next never-allocated page id; pages >= this are unused.
    pub high_water: PageId,
    /// Head of the on-disk free list (linked through the free pages' aux field), 0 = empty.
    pub free_head: PageId,
    pub free_count: u64,
    pub last_lsn: u64,
    pub next_tree_id: u32,
    pub page_capacity: u64,
    /// Last write-back timestamp, so write histories stay monotonic across reopen.
    pub write_clock: u64,
    /// The database keeps a WAL: opening it needs its log.
    pub wal: bool,
    /// Where redo starts (the last complete checkpoint's record); 0 = no checkpoint yet.
    pub checkpoint_lsn: u64,
    /// Stored values carry a tag and may be blob references (`crate::blob`).
    pub blobs: bool,
    /// Out of place: the device size the zone layout and its metadata were sized for when the
    /// file may grow past its size (`Options::max_file_bytes`); 0: the device's own size.
    pub layout_bytes: u64,
}

impl Meta {
    pub fn encode(&self, p: &mut PageBuf) {
        p.fill(0);
        p[OFF_VERSION] = FORMAT_VERSION;
        p[OFF_KIND] = PageKind::Meta as u8;
        put_u64(p, OFF_MAGIC, MAGIC);
        put_u32(p, OFF_PAGE_SIZE, PAGE_SIZE as u32);
        p[OFF_WRITE_MODE] = self.write_mode;
        put_u64(p, OFF_CATALOG_ROOT, self.catalog_root);
        put_u64(p, OFF_HIGH_WATER, self.high_water);
        put_u64(p, OFF_FREE_HEAD, self.free_head);
        put_u64(p, OFF_FREE_COUNT, self.free_count);
        put_u64(p, OFF_LAST_LSN, self.last_lsn);
        put_u32(p, OFF_NEXT_TREE_ID, self.next_tree_id);
        put_u64(p, OFF_PAGE_CAPACITY, self.page_capacity);
        put_u64(p, OFF_WRITE_CLOCK, self.write_clock);
        p[OFF_WAL] = self.wal as u8;
        p[OFF_BLOBS] = self.blobs as u8;
        put_u64(p, OFF_CHECKPOINT_LSN, self.checkpoint_lsn);
        put_u64(p, OFF_LAYOUT_BYTES, self.layout_bytes);
        super::seal(p);
    }

    pub fn decode(p: &PageBuf) -> Result<Meta, MetaError> {
        if get_u64(p, OFF_MAGIC) != MAGIC {
            return Err(MetaError::BadMagic);
        }
        let stored = get_u32(p, OFF_CHECKSUM);
        if stored != super::compute_checksum(p) {
            return Err(MetaError::Checksum);
        }
        if p[OFF_VERSION] != FORMAT_VERSION || p[OFF_KIND] != PageKind::Meta as u8 {
            return Err(MetaError::Version(p[OFF_VERSION]));
        }
        let page_size = get_u32(p, OFF_PAGE_SIZE);
        if page_size as usize != PAGE_SIZE {
            return Err(MetaError::PageSize(page_size));
        }
        let m = Meta {
            write_mode: p[OFF_WRITE_MODE],
            catalog_root: get_u64(p, OFF_CATALOG_ROOT),
            high_water: get_u64(p, OFF_HIGH_WATER),
            free_head: get_u64(p, OFF_FREE_HEAD),
            free_count: get_u64(p, OFF_FREE_COUNT),
            last_lsn: get_u64(p, OFF_LAST_LSN),
            next_tree_id: get_u32(p, OFF_NEXT_TREE_ID),
            page_capacity: get_u64(p, OFF_PAGE_CAPACITY),
            write_clock: get_u64(p, OFF_WRITE_CLOCK),
            wal: p[OFF_WAL] == 1,
            checkpoint_lsn: get_u64(p, OFF_CHECKPOINT_LSN),
            blobs: p[OFF_BLOBS] == 1,
            layout_bytes: get_u64(p, OFF_LAYOUT_BYTES),
        };
        if p[OFF_BLOBS] > 1 {
            return Err(MetaError::Flag { flag: "blobs", value: p[OFF_BLOBS] });
        }
        if p[OFF_WAL] > 1 {
            return Err(MetaError::Flag { flag: "WAL", value: p[OFF_WAL] });
        }
        if !m.is_sane() {
            return Err(MetaError::Inconsistent(Box::new(m)));
        }
        Ok(m)
    }

    /// What `decode` requires of the fields: the catalog root and the free list inside the
    /// allocated pages, those inside the page capacity. Writers assert it before encoding, so
    /// no superblock is written that a reopen would refuse.
    pub fn is_sane(&self) -> bool {
        self.catalog_root > META_PAGE_ID
            && self.catalog_root < self.high_water
            && self.high_water <= self.page_capacity
            && self.free_head < self.high_water
            && self.free_count < self.high_water
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_roundtrip_and_corruption() {
        let m = Meta {
            write_mode: 0,
            catalog_root: 1,
            high_water: 10,
            free_head: 4,
            free_count: 2,
            last_lsn: 99,
            next_tree_id: 3,
            page_capacity: 1000,
            write_clock: 7,
            wal: true,
            checkpoint_lsn: 4136,
            blobs: true,
            layout_bytes: 1 << 30,
        };
        let mut p = [0u8; PAGE_SIZE];
        m.encode(&mut p);
        assert_eq!(Meta::decode(&p), Ok(m));
        p[60] ^= 1;
        assert!(Meta::decode(&p).is_err());
    }
}
