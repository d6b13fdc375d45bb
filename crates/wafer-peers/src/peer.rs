//! An engine under comparison, as the phases drive it: a leaf the engines implement and the
//! phases and the watcher call.
use crate::procio::{self, HostIo, ProcIoError};
use wafer_harness::runner::{KvTarget, TargetError};

/// An engine under comparison: the runner's target plus where its host bytes are counted.
pub(crate) trait Peer: Send + Sync {
    fn target(&self) -> &dyn KvTarget;
    /// Cumulative host I/O of every process doing this engine's work (by default this one: the
    /// engine's worker, where nothing else does I/O).
    fn host_io(&self) -> Result<HostIo, ProcIoError> {
        procio::of_pid(std::process::id())
    }
    /// Under lazy durability, called every [`LAZY_SYNC_INTERVAL`] while the engine runs: its
    /// own call that puts what it has committed on stable storage (a log sync, an environment
    /// sync), so that no engine's writes wait in the page cache for the phase's end. Engines
    /// whose own background work already bounds that (PostgreSQL's WAL writer) leave it be.
    fn sync(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Cumulative bytes the engine wrote, by the kind of file, as its own counters tell
    /// (empty: it does not tell). Only kinds that are files: what reached the device of them is
    /// the device's count.
    fn written_by_kind(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// How often lazy durability syncs each engine: the bound on how long a commit may sit in
/// the page cache, the same for every engine.
pub const LAZY_SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
