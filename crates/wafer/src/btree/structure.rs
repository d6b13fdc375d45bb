//! A tree's structure version, which optimistic lookups validate against (`lookup.rs`): a leaf
//! of its own, so the tree's state holds it without naming the lookups that read it.
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// A tree's structure version: bumped to odd when a structure change starts and to even when
/// it ends ([`StructureVersion::change`]).
#[derive(Debug, Default)]
pub struct StructureVersion(AtomicU64);

/// An open structure change; the drop ends it.
#[derive(Debug)]
pub struct StructureChange<'a>(&'a StructureVersion);

impl StructureVersion {
    /// The version to validate against, None while a change runs.
    pub(super) fn begin(&self) -> Option<u64> {
        let v = self.0.load(Ordering::Acquire);
        // Each change adds two: a counter that wrapped would validate a read against a version
        // an earlier change already used.
        debug_assert!(v < u64::MAX - 1, "structure version {v} about to wrap");
        v.is_multiple_of(2).then_some(v)
    }

    pub(super) fn validate(&self, seen: u64) -> bool {
        // Paired with `begin`, which hands out even versions only: an odd one would validate
        // a read that overlapped a structure change.
        assert!(seen.is_multiple_of(2), "validating against a version read mid-change");
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) == seen
    }

    /// Starts a structure change. The caller holds the tree's structure latch exclusive (and
    /// ends the change before it lets the latch go), so changes never overlap.
    pub fn change(&self) -> StructureChange<'_> {
        let old = self.0.fetch_add(1, Ordering::Relaxed);
        // Odd before any page of the change is touched (the pages' own entries publish it).
        fence(Ordering::Release);
        assert_eq!(old % 2, 0, "structure changes nest");
        StructureChange(self)
    }
}

impl Drop for StructureChange<'_> {
    fn drop(&mut self) {
        let old = self.0 .0.fetch_add(1, Ordering::Release);
        debug_assert_eq!(old % 2, 1);
    }
}
