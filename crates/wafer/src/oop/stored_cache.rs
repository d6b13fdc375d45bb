//! A cache of stored (compressed, packed) page bytes, for the pages the buffer pool does not
//! hold: blob pages, which a lookup reads once and hands out as a value, never as a frame.
//!
//! Why stored bytes and not pages: a 1 KB value is one 4 KiB blob page but about 500 stored
//! bytes, so the same memory holds eight times the values a page cache would. A hit skips the
//! device read and still decodes and checks the bytes like a read from the device.
//!
//! Keyed by where the bytes lie *and* the zone's erase count: a zone is append-only between
//! resets, so the bytes at a (zone, erase count, slot, offset) never change. A reader that
//! inserts bytes it read just before their zone was reset inserts them under the old erase
//! count, where no later lookup looks. No invalidation is needed for correctness; stale entries
//! age out of the CLOCK.
//!
//! The budget is the caller's on every insert (the memory the buffer pool leaves unused), so
//! the cache shrinks as the tree's pages take frames.
use crate::space::{Location, ZoneId};
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// Where stored bytes lie, in a zone's life between two resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StoredKey {
    zone: ZoneId,
    erase_count: u32,
    slot: u32,
    offset_bytes: u16,
}

impl StoredKey {
    pub(crate) fn new(loc: Location, erase_count: u32) -> StoredKey {
        // A page's start names it within its zone's life, crossing a slot's end or not; a
        // page stored raw (a whole slot) is never cached, nor a location with nothing in it.
        debug_assert!(
            loc.stored_bytes > 0 && usize::from(loc.stored_bytes) < crate::page::PAGE_SIZE,
            "{loc:?} is not cacheable"
        );
        StoredKey { zone: loc.zone, erase_count, slot: loc.slot, offset_bytes: loc.offset_bytes }
    }
}

/// Bookkeeping bytes an entry costs beside its stored bytes (key, map slot, queue slot, box
/// header): counted against the budget so many small entries cannot overrun it.
const ENTRY_OVERHEAD_BYTES: u64 = 64;

#[derive(Debug)]
struct Entry {
    bytes: Box<[u8]>,
    referenced: bool,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<StoredKey, Entry>,
    /// CLOCK order: the hand takes from the front, second chances go to the back.
    queue: VecDeque<StoredKey>,
    /// Stored bytes plus overhead of every entry.
    bytes: u64,
}

#[derive(Debug, Default)]
pub(crate) struct StoredCache {
    state: Mutex<State>,
}

fn cost_bytes(len: usize) -> u64 {
    debug_assert!(len <= crate::page::PAGE_SIZE, "stored bytes of {len} exceed a slot");
    len as u64 + ENTRY_OVERHEAD_BYTES
}

impl StoredCache {
    fn lock(&self) -> MutexGuard<'_, State> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert_eq!(st.entries.len(), st.queue.len(), "every entry is on the clock once");
        st
    }

    /// Copies the bytes at `key` into `out` (cleared first) and returns true, or returns false.
    pub(crate) fn get(&self, key: &StoredKey, out: &mut Vec<u8>) -> bool {
        let mut st = self.lock();
        let Some(e) = st.entries.get_mut(key) else { return false };
        e.referenced = true;
        out.clear();
        out.extend_from_slice(&e.bytes);
        debug_assert!(!out.is_empty(), "an empty entry was cached");
        true
    }

    /// Keeps `bytes` at `key` within `budget_bytes` for the whole cache, evicting by CLOCK;
    /// does nothing when the entry alone does not fit.
    pub(crate) fn insert(&self, key: StoredKey, bytes: &[u8], budget_bytes: u64) {
        assert!(!bytes.is_empty(), "stored bytes of a page are never empty");
        let cost = cost_bytes(bytes.len());
        let mut st = self.lock();
        if st.entries.contains_key(&key) {
            return;
        }
        let target = budget_bytes.saturating_sub(cost);
        if cost > budget_bytes {
            Self::shrink(&mut st, budget_bytes);
            return;
        }
        Self::shrink(&mut st, target);
        st.entries.insert(key, Entry { bytes: bytes.into(), referenced: false });
        st.queue.push_back(key);
        st.bytes += cost;
        debug_assert_eq!(st.entries.len(), st.queue.len(), "every entry is on the clock once");
    }

    /// Evicts until the entries take at most `target_bytes`. Bounded: each entry gets at most
    /// one second chance per call, so two passes over the queue empty it.
    fn shrink(st: &mut State, target_bytes: u64) {
        let steps_max = st.queue.len().saturating_mul(2);
        for _ in 0..steps_max {
            if st.bytes <= target_bytes {
                break;
            }
            let Some(key) = st.queue.pop_front() else { break };
            let Some(e) = st.entries.get_mut(&key) else {
                debug_assert!(false, "a queued key without an entry");
                continue;
            };
            if e.referenced {
                e.referenced = false;
                st.queue.push_back(key);
                continue;
            }
            let gone = st.entries.remove(&key).map_or(0, |e| cost_bytes(e.bytes.len()));
            st.bytes -= gone;
        }
        debug_assert!(st.bytes <= target_bytes || st.queue.is_empty() || steps_max > 0);
    }

    /// The bytes the entries take now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        let st = self.lock();
        debug_assert!(st.entries.is_empty() == (st.bytes == 0), "bytes without entries");
        st.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(zone: u32, erase_count: u32, slot: u32) -> StoredKey {
        let loc = Location { zone, slot, offset_bytes: 32, stored_bytes: 100 };
        StoredKey::new(loc, erase_count)
    }

    #[test]
    fn hits_what_it_kept_and_never_another_erase_count() {
        let c = StoredCache::default();
        c.insert(key(1, 0, 5), &[7u8; 100], 10_000);
        let mut out = Vec::new();
        assert!(c.get(&key(1, 0, 5), &mut out));
        assert_eq!(out, vec![7u8; 100]);
        // The zone was reset and the same place rewritten: the old bytes must not answer.
        assert!(!c.get(&key(1, 1, 5), &mut out));
        assert!(!c.get(&key(2, 0, 5), &mut out));
    }

    #[test]
    fn stays_within_the_budget_and_keeps_the_referenced() {
        let c = StoredCache::default();
        let budget = 10 * cost_bytes(100);
        for slot in 0..10 {
            c.insert(key(0, 0, slot), &[slot as u8; 100], budget);
        }
        assert_eq!(c.bytes(), budget);
        let mut out = Vec::new();
        assert!(c.get(&key(0, 0, 0), &mut out), "slot 0 is cached");
        // One more entry evicts the oldest unreferenced one (slot 1), not slot 0.
        c.insert(key(0, 0, 10), &[10; 100], budget);
        assert_eq!(c.bytes(), budget);
        assert!(c.get(&key(0, 0, 0), &mut out));
        assert!(!c.get(&key(0, 0, 1), &mut out));
        // A smaller budget (the pool took frames) shrinks the cache at the next insert.
        c.insert(key(0, 0, 11), &[11; 100], 3 * cost_bytes(100));
        assert!(c.bytes() <= 3 * cost_bytes(100));
        // A budget too small for the entry keeps nothing.
        c.insert(key(0, 0, 12), &[12; 100], 10);
        assert_eq!(c.bytes(), 0);
        assert!(!c.get(&key(0, 0, 12), &mut out));
    }
}
