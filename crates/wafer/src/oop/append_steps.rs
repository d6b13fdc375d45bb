//! Runs one batch's append as the orchestrator's [`Durable`] steps, through the executor the
//! store's compression calls for: host packing (append.rs) or the device's compressed writes
//! (device_append.rs). The choice lives here, above both, because the device executor commits
//! through the host executor's `commit`: with the dispatch in append.rs the two files would
//! name each other.
use super::append::{self, Append};
use super::codec::Compression;
use super::device_append;
use super::orchestrate::{Durable, Outcome};
use super::state::Inner;
use crate::space::SpaceError;
use crate::{Error, Result};

/// Carries out `a` with the executor for the store's compression.
fn execute(inner: &Inner, a: &Append<'_>) -> Result<Outcome> {
    // The orchestrator retries a refused append after GC or a flush, so a refusal must leave
    // the space as it was: no slot reserved. Read for debug builds only.
    let issued = || inner.lock_state().space.counters().issued_total_slots();
    let issued_before = cfg!(debug_assertions).then(issued);
    let outcome = match inner.options.compression {
        Compression::Device => device_append::execute(inner, a)?,
        _ => append::execute(inner, a)?,
    };
    if let (Some(before), Outcome::NeedsGc | Outcome::AwaitingDurability) = (issued_before, outcome)
    {
        debug_assert_eq!(issued(), before, "a refused append reserved slots");
    }
    Ok(outcome)
}

/// The executor as the orchestrator's [`Durable`] steps for one batch.
#[derive(Debug)]
pub(crate) struct AppendSteps<'a> {
    pub inner: &'a Inner,
    pub append: Append<'a>,
}

impl Durable for AppendSteps<'_> {
    type Error = Error;
    fn try_append(&mut self) -> Result<Outcome> {
        // The orchestrator runs under `writer`: the slots this reserves and the map entries it
        // commits would race another writer's.
        debug_assert!(self.inner.writer.try_lock().is_err(), "an append without the writer mutex");
        execute(self.inner, &self.append)
    }
    fn make_durable(&mut self) -> Result<()> {
        // Under `writer` still: the zones released below are the ones this batch waits for.
        debug_assert!(self.inner.writer.try_lock().is_err(), "a flush without the writer mutex");
        self.inner.make_durable()
    }
    fn out_of_space(&self) -> SpaceError {
        let needed = u64::from(self.append.plan.page_count());
        // `Append::check` refused an empty batch: running out of space needs pages to place.
        debug_assert!(needed > 0, "out of space for an empty batch");
        self.inner.lock_state().space.out_of_space(needed)
    }
}
