//! When DB GC runs and when the map journal is flushed: the orchestration of the out-of-place
//! write path, apart from what it orchestrates. The executor (append.rs) carries out one plan
//! or says why it cannot ([`Outcome`]), changing nothing then; GC (gc.rs) runs one cycle at a
//! time. Only the loops here decide, for the store's write entry point ([`write`]), for GC's
//! own copies ([`write_copies`]) and for the GC loop ([`gc_until_satisfied`]). They are generic
//! over the steps, so the space's model test drives these very loops over a model device.
use crate::space::SpaceError;

/// What one append attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Written, synced, logged and committed; `all_committed` is false when a GC copy was
    /// dropped because its page moved meanwhile.
    Done { all_committed: bool },
    /// No room until a GC cycle frees a zone (nothing changed).
    NeedsGc,
    /// No room until the journal is flushed and waiting zones are released (nothing changed).
    AwaitingDurability,
}

/// Appending one planned batch, and making map changes durable.
pub(crate) trait Durable {
    type Error: From<SpaceError>;
    fn try_append(&mut self) -> Result<Outcome, Self::Error>;
    /// Flushes the journal and releases the zones that waited for it.
    fn make_durable(&mut self) -> Result<(), Self::Error>;
    /// The final error once retries are exhausted.
    fn out_of_space(&self) -> SpaceError;
}

/// Running GC cycles.
pub(crate) trait Collect {
    type Error: From<SpaceError>;
    /// One cycle; Ok(false): no zone would free anything.
    fn gc_cycle(&mut self) -> Result<bool, Self::Error>;
    /// Free zones fell below the low mark.
    fn needs_gc(&self) -> bool;
    /// Free zones reached the high mark.
    fn gc_satisfied(&self) -> bool;
    /// Bounds every loop: each useful retry frees or releases a zone.
    fn zone_count(&self) -> u32;
}

/// A user write-back batch: GC first when free zones run short, then append, running another
/// GC cycle (`NeedsGc`) or flushing the journal (`AwaitingDurability`) until it fits.
pub(crate) fn write<S, E>(steps: &mut S) -> Result<bool, E>
where
    S: Durable<Error = E> + Collect<Error = E>,
    E: From<SpaceError>,
{
    // The attempts below are bounded by the zones: a layout without any could only fail.
    debug_assert!(steps.zone_count() > 0, "a write to a layout of no zones");
    if steps.needs_gc() {
        gc_until_satisfied(steps)?;
    }
    let attempts = 2 * u64::from(steps.zone_count()) + 2;
    for _ in 0..attempts {
        match steps.try_append()? {
            Outcome::Done { all_committed } => return Ok(all_committed),
            Outcome::NeedsGc => {
                if !steps.gc_cycle()? {
                    break;
                }
            }
            Outcome::AwaitingDurability => steps.make_durable()?,
        }
    }
    Err(steps.out_of_space().into())
}

/// GC's own copies: never a nested GC cycle (the GC reserve is theirs); a flush when zones only
/// wait for the journal.
pub(crate) fn write_copies<S: Durable>(steps: &mut S) -> Result<bool, S::Error> {
    // Bound: one flush releases every waiting zone, so a second attempt either fits or the
    // reserve is gone.
    let mut flushed = false;
    for _ in 0..3 {
        match steps.try_append()? {
            Outcome::Done { all_committed } => return Ok(all_committed),
            Outcome::NeedsGc => break,
            Outcome::AwaitingDurability => {
                // The bound's premise: zones still waiting after a flush would make it too low.
                debug_assert!(!flushed, "GC copies still wait for durability after a flush");
                steps.make_durable()?;
                flushed = true;
            }
        }
    }
    Err(steps.out_of_space().into())
}

/// GC cycles until the free-zone target is met or no victim remains; returns the cycles run.
pub(crate) fn gc_until_satisfied<S: Collect>(steps: &mut S) -> Result<u32, S::Error> {
    // The cycles are bounded by the zones: none would make GC a silent no-op.
    debug_assert!(steps.zone_count() > 0, "GC over a layout of no zones");
    let mut cycles = 0;
    for _ in 0..steps.zone_count() {
        if steps.gc_satisfied() || !steps.gc_cycle()? {
            break;
        }
        cycles += 1;
    }
    Ok(cycles)
}
