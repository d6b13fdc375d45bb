//! A device's size, which a device that can grow (a file, or a memory or fault device built
//! to stand for one) raises with `grow_to` while it is shared. Never shrinks.
use super::{DeviceError, BLOCK_BYTES};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub(crate) struct Capacity {
    bytes: AtomicU64,
    /// The most `grow_to` may reach; None: a fixed size.
    max_bytes: Option<u64>,
}

impl Capacity {
    pub fn fixed(bytes: u64) -> Capacity {
        Capacity { bytes: AtomicU64::new(bytes), max_bytes: None }
    }
    pub fn growable(bytes: u64, max_bytes: u64) -> Capacity {
        assert!(max_bytes >= bytes, "a limit of {max_bytes} bytes below {bytes}");
        Capacity { bytes: AtomicU64::new(bytes), max_bytes: Some(max_bytes) }
    }
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes
    }
    /// Whether growing to `bytes` is allowed: a fixed size refuses (`Unsupported`), a limit
    /// refuses past it (`NoSpace`, as a full filesystem does).
    pub fn check_growth(&self, bytes: u64) -> Result<(), DeviceError> {
        assert!(bytes.is_multiple_of(BLOCK_BYTES), "growth to {bytes} bytes");
        match self.max_bytes {
            None => Err(DeviceError::Unsupported("growing: the device has a fixed size")),
            Some(max) if bytes > max => Err(DeviceError::NoSpace),
            Some(_) => Ok(()),
        }
    }
    /// Publishes a growth the device has made durable.
    pub fn raise(&self, bytes: u64) {
        self.bytes.fetch_max(bytes, Ordering::AcqRel);
    }
}
