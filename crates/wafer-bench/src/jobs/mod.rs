//! fio-like jobs for the flash emulator: sequential and random writes, reads and trims over
//! regions, with uniform / zipfian / hot-cold addresses, a fill step and a stop condition in
//! bytes or device capacities. The CLI (`wafer emu run`) only parses flags into a [`RunSpec`].
pub mod device;
pub mod error;
pub mod fill;
pub mod jobfile;
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
