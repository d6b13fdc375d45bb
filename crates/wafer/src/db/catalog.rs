//! The catalog: tree 0, rooted at page 1, maps a tree name to its id and root page.
//! Value layout: `[version u8 = 1][tree_id u32][root u64]`, little-endian.
use crate::page::PageId;

pub const CATALOG_TREE_ID: u32 = 0;
pub const CATALOG_ROOT: PageId = 1;
pub const TREE_NAME_MAX_BYTES: usize = 255;
const ENTRY_VERSION: u8 = 1;
const ENTRY_BYTES: usize = 13;

pub fn encode(tree_id: u32, root: PageId) -> [u8; ENTRY_BYTES] {
    let mut v = [0u8; ENTRY_BYTES];
    v[0] = ENTRY_VERSION;
    v[1..5].copy_from_slice(&tree_id.to_le_bytes());
    v[5..13].copy_from_slice(&root.to_le_bytes());
    // The next open reads the tree back through `decode`.
    debug_assert_eq!(decode(&v), Ok((tree_id, root)));
    v
}

/// A catalog value of the wrong length or version (`version` is None for an empty value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("catalog entry of {len} bytes, version {version:?}")]
pub struct BadEntry {
    pub len: usize,
    pub version: Option<u8>,
}

pub fn decode(v: &[u8]) -> Result<(u32, PageId), BadEntry> {
    // The slices below cover the entry exactly: version, tree id, root.
    const { assert!(ENTRY_BYTES == 1 + 4 + 8) };
    if v.len() != ENTRY_BYTES || v[0] != ENTRY_VERSION {
        return Err(BadEntry { len: v.len(), version: v.first().copied() });
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&v[1..5]);
    let mut root = [0u8; 8];
    root.copy_from_slice(&v[5..13]);
    Ok((u32::from_le_bytes(id), u64::from_le_bytes(root)))
}

pub fn check_name(name: &str) -> crate::Result<()> {
    // A name that passes is the catalog's key for its tree: it must be a key the tree takes.
    const { assert!(TREE_NAME_MAX_BYTES <= crate::page::node::MAX_KEY_BYTES) };
    if name.is_empty() {
        return Err(crate::Error::InvalidTreeName(name.into(), "empty"));
    }
    if name.starts_with('\0') {
        return Err(crate::Error::InvalidTreeName(
            name.into(),
            "starts with NUL (kept for the engine's own trees)",
        ));
    }
    if name.len() > TREE_NAME_MAX_BYTES {
        return Err(crate::Error::InvalidTreeName(name.into(), "longer than 255 bytes"));
    }
    Ok(())
}
