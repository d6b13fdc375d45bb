//! Workload generators, independent of any engine or device: key distributions ([`dist`]),
//! YCSB A-F ([`ycsb`]), compressible values ([`values`]), block-trace parsers ([`trace`]) and
//! the operation kinds a runner times ([`op_kind`]).

pub mod dist;
pub mod op_kind;
pub mod trace;
pub mod values;
pub mod ycsb;
