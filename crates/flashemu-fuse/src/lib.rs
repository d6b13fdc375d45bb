//! flashemu-fuse: an emulated SSD as one file, `MOUNT/ssd`, served over FUSE, so that anything
//! that runs on a block device runs on the emulator without a VM: a loop device over the file
//! carries a real filesystem (ext4 with `-o discard` passes TRIM down as hole punches), or a
//! program opens the file directly.
//!
//! ```text
//!  engine --> ext4 (-o discard) --> /dev/loopN --> MOUNT/ssd --FUSE--> BlockFile --> Ssd
//!                 read/write/fsync               read/write/fsync      4 KiB LBAs
//!                 discard                        fallocate(PUNCH_HOLE)  trim
//!  MOUNT/stats: the device's counters as JSON, a fresh snapshot at each open
//! ```
//!
//! [`ServerChild`] runs the server as a child process (`wafer emu serve`), so that a program
//! that aborts or hangs on the mount cannot take the server, or the program that started both,
//! with it.
//!
//! One lock around the emulator: FUSE may call from several threads, the device is
//! single-threaded (as a real SSD's FTL is behind its command queue).

pub mod blockfile;
pub mod child;
mod fs;
pub mod loopfs;
pub mod serve;
pub mod stats;

pub use blockfile::{BlockFile, BlockFileError};
pub use child::{ChildError, ServerChild};
pub use loopfs::{LoopFs, LoopFsError};
pub use serve::{serve, ServeError, Served, DEVICE_FILE, STATS_FILE};
pub use stats::Stats;
