//! Free pages cost no slot. The allocator links free pages through their own headers (`aux` =
//! next free page), which in place means one 4 KiB page each; out of place a freed page is
//! unmapped instead (its slot becomes invalid, GC reclaims it) and only its 80-byte header is
//! kept here, from which `read_page` rebuilds the exact page image (a free page is a header and
//! zeros). So after deleting everything, mapped pages and used zones return to their baseline.
//!
//! Not persisted: at open the chain is rebuilt from the superblock's free-list head and count
//! and the set of unmapped page ids below the high-water mark (`rebuild`).
use crate::page::{self, PageBuf, PageId, PageKind, HEADER_BYTES, PAGE_SIZE};
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct FreePages {
    headers: HashMap<PageId, [u8; HEADER_BYTES]>,
}

/// The header of a sealed free page whose body is all zeros, or None if `p` is anything else.
pub fn free_header(p: &PageBuf) -> Option<[u8; HEADER_BYTES]> {
    if page::kind(p) != Some(PageKind::Free) || p[HEADER_BYTES..].iter().any(|b| *b != 0) {
        return None;
    }
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&p[..HEADER_BYTES]);
    Some(h)
}

impl FreePages {
    pub fn count(&self) -> usize {
        self.headers.len()
    }
    pub fn pids(&self) -> impl Iterator<Item = PageId> + '_ {
        self.headers.keys().copied()
    }
    pub fn insert(&mut self, pid: PageId, header: [u8; HEADER_BYTES]) {
        self.headers.insert(pid, header);
    }
    pub fn remove(&mut self, pid: PageId) {
        self.headers.remove(&pid);
    }

    /// The page image of free page `pid`, if it is one.
    pub fn read(&self, pid: PageId, buf: &mut PageBuf) -> bool {
        let Some(h) = self.headers.get(&pid) else { return false };
        buf.fill(0);
        buf[..HEADER_BYTES].copy_from_slice(h);
        true
    }

    /// Rebuilds the chain the superblock describes from the unmapped page ids below
    /// `high_water` (page 0 excluded): `head` first, then the others ascending. Err when the
    /// counts disagree (the map and the superblock come from different checkpoints).
    pub fn rebuild(
        unmapped: &[PageId],
        head: PageId,
        count: u64,
        lsn: u64,
    ) -> Result<FreePages, String> {
        if unmapped.len() as u64 != count {
            return Err(format!(
                "superblock lists {count} free pages, the page map leaves {} unmapped",
                unmapped.len()
            ));
        }
        if count > 0 && !unmapped.contains(&head) {
            return Err(format!("free-list head {head} is mapped"));
        }
        let mut order: Vec<PageId> = Vec::with_capacity(unmapped.len());
        if count > 0 {
            order.push(head);
        }
        order.extend(unmapped.iter().copied().filter(|p| *p != head));
        let mut free = FreePages::default();
        let mut p = [0u8; PAGE_SIZE];
        for (i, pid) in order.iter().enumerate() {
            let next = order.get(i + 1).copied().unwrap_or(0);
            p.fill(0);
            page::format(&mut p, *pid, PageKind::Free, 0, next);
            page::set_lsn(&mut p, lsn);
            page::seal(&mut p);
            let h = free_header(&p);
            assert!(h.is_some());
            if let Some(h) = h {
                free.insert(*pid, h);
            }
        }
        Ok(free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_page_round_trips_through_its_header() {
        let mut p = [0u8; PAGE_SIZE];
        page::format(&mut p, 9, PageKind::Free, 0, 4);
        page::push_write_history(&mut p, 77);
        page::seal(&mut p);
        let mut f = FreePages::default();
        f.insert(9, free_header(&p).unwrap());
        let mut q = [1u8; PAGE_SIZE];
        assert!(f.read(9, &mut q));
        assert_eq!(p, q);
        assert_eq!(page::verify(&q, 9), Ok(PageKind::Free));
        page::format(&mut p, 9, PageKind::Leaf, 1, 0);
        assert!(free_header(&p).is_none());
    }

    #[test]
    fn rebuilt_chain_starts_at_the_head_and_links_all() {
        let f = FreePages::rebuild(&[3, 5, 8], 5, 3, 11).unwrap();
        let mut p = [0u8; PAGE_SIZE];
        let mut at = 5;
        let mut seen = vec![];
        for _ in 0..3 {
            assert!(f.read(at, &mut p));
            assert_eq!(page::verify(&p, at), Ok(PageKind::Free));
            seen.push(at);
            at = page::aux(&p);
        }
        assert_eq!((seen, at), (vec![5, 3, 8], 0));
        assert!(FreePages::rebuild(&[3, 5], 5, 3, 0).is_err());
        assert!(FreePages::rebuild(&[3, 5], 4, 2, 0).is_err());
    }
}
