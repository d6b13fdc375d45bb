//! The types every part of the tree names: what operations need from the database ([`Env`]), a
//! tree's shared state ([`TreeCore`]) and the proof of its exclusive latch ([`Exclusive`]). A
//! leaf, so the optimistic lookups and the structure modifications, which `mod.rs` calls, name
//! them without naming `mod.rs`; their methods stay with the code that uses them.
use super::structure::{StructureChange, StructureVersion};
use crate::alloc::Allocator;
use crate::buffer::BufferPool;
use crate::page::{PageId, PageLogger};
use std::sync::{RwLock, RwLockWriteGuard};

/// Deeper than any real tree (a corrupt pointer cycle ends here instead of looping forever).
pub const DEPTH_MAX: usize = 64;

/// What tree operations need from the database.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    pub pool: &'a BufferPool,
    pub logger: &'a dyn PageLogger,
    pub alloc: &'a Allocator,
    /// Set when a failed structure change leaves a tree in an unknown state.
    pub poisoned: &'a std::sync::atomic::AtomicBool,
    /// `Options::append_split`: a key appended to a full leaf splits off alone.
    pub append_split: bool,
}

#[derive(Debug)]
pub struct TreeCore {
    pub id: u32,
    pub root: PageId,
    pub(super) smo: RwLock<()>,
    /// Odd while a structure modification runs (optimistic lookups validate it).
    pub(super) structure: StructureVersion,
    /// Set, under the exclusive latch, when the tree is dropped: its pages are free (and may
    /// belong to another tree by now), so writes through a stale handle must stop here.
    pub(super) dropped: std::sync::atomic::AtomicBool,
}

/// Proof that the caller holds a tree's structure latch exclusive. It also holds the tree's
/// structure version odd (`lookup.rs`), so no optimistic lookup validates while it lives: a
/// split, a rebalance or a batch is seen whole or not at all, as by latched readers.
#[derive(Debug)]
pub struct Exclusive<'a> {
    pub(super) core: &'a TreeCore,
    /// Dropped before the latch: the next holder's change never overlaps this one.
    pub(super) _change: StructureChange<'a>,
    pub(super) _g: RwLockWriteGuard<'a, ()>,
}
