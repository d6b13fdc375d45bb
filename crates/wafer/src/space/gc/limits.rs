//! GC's bounds, apart from the policies so that lower files can read them.

/// Victims one GC cycle may take at most (bounds the choice and the pages it lists).
pub const VICTIMS_PER_CYCLE_MAX: usize = 16;
