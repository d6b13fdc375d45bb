//! Checking a page read from the store. Apart from `mod.rs` because it calls into the node
//! and blob layouts, which build on `mod.rs`'s header.
use super::{
    compute_checksum, get_u32, kind, node, page_id, PageBuf, PageId, PageKind, FORMAT_VERSION,
    OFF_CHECKSUM, OFF_KIND, OFF_VERSION,
};

/// Checks a page read from the store for `pid`: checksum, version, identity and structure.
/// After this returns Ok, node accessors cannot index out of bounds on this page.
pub fn verify(p: &PageBuf, pid: PageId) -> Result<PageKind, String> {
    let stored = get_u32(p, OFF_CHECKSUM);
    let computed = compute_checksum(p);
    if stored != computed {
        return Err(format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"));
    }
    if p[OFF_VERSION] != FORMAT_VERSION {
        return Err(format!("format version {} (expected {FORMAT_VERSION})", p[OFF_VERSION]));
    }
    if page_id(p) != pid {
        return Err(format!("page header names page {} (misdirected write?)", page_id(p)));
    }
    let Some(kind) = kind(p) else {
        return Err(format!("unknown page kind {}", p[OFF_KIND]));
    };
    match kind {
        PageKind::Leaf | PageKind::Inner => node::check_structure(p, kind)?,
        PageKind::Free => {}
        PageKind::Blob => crate::blob::check_page_structure(p)?,
        PageKind::Meta => return Err("meta page where a tree page was expected".into()),
    }
    Ok(kind)
}
