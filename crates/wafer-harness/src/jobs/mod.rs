//! fio-like jobs for the flash emulator: sequential and random writes, reads and trims over
//! regions, with uniform / zipfian / hot-cold addresses, a fill step and a stop condition in
//! bytes or device capacities. The CLI (`wafer emu run`) only parses flags into a [`RunSpec`].
//!
//! Semantics, in the order a run applies them:
//! - **Fill**: blocks `[0, fill * capacity)` are written once, sequentially, in 1 MiB writes,
//!   without placement. Samples are taken during the fill too.
//! - **Regions**: a job without an explicit region gets the i-th n-th of the filled span (or of
//!   the whole device without a fill), so random overwrites keep the device as full as the fill
//!   left it. Regions are rounded down to whole `bs` units (whole zones on ZNS).
//! - **Placement**: job i writes to stream i (conventional with >1 streams, modulo the count) or
//!   FDP handle i (modulo the handle count); an explicit `stream` is passed as is and the
//!   device rejects one it lacks. One-stream devices get no placement.
//! - **Scheduling**: jobs issue one I/O each in turn (round robin); each has its own PRNG seeded
//!   from (seed, job index), so a run is deterministic for a seed.
//! - **Stop condition**: host bytes issued by the jobs after the fill, reads and trims included
//!   (as fio's `io_size`); `Nx` is N times the logical capacity.
//! - **Report**: top-level `host_bytes`/`flash_bytes`/`waf`/`erases` cover the jobs only (fill
//!   excluded); `steady_state_waf` is flash/host over the last logical capacity of the jobs'
//!   host writes (`null` if they wrote less than one capacity); `counters` and the samples
//!   count from the new device.
//! - **ZNS**: only sequential `write` / `read` jobs; a write at a zone start resets that zone.
pub mod device;
pub mod error;
pub mod fill;
pub mod jobfile;
pub mod replay;
pub mod runner;
pub mod size;
pub mod spec;
pub mod zoned;

pub use device::{resolve_config, DeviceSource};
pub use error::JobError;
pub use jobfile::JobFile;
pub use runner::run;
pub use size::{parse_bytes, Amount, Until};
pub use spec::{parse_block_size, parse_distribution, JobSpec, Pattern, Region, RunSpec, Workload};
