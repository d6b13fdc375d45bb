//! A test device that loses power: writes stay volatile until `sync`; at the chosen device call
//! the power fails, and every unsynced write (the in-flight batch included) reaches the media
//! only partly: each 4 KiB block is old, new, or torn sector by sector (512 B), each sector old,
//! new, or (optionally) garbage.
//! The `dev` branch's fault-injecting device generalises this; this small model lets the log be
//! tested on its own.
use crate::device::{check_range, Device, DeviceError, ReadOp, WriteOp, BLOCK_BYTES};
use std::sync::Mutex;

pub const SECTOR_BYTES: usize = 512;

#[derive(Debug)]
pub struct CrashDevice {
    capacity_bytes: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    durable: Vec<u8>,
    /// Unsynced writes in issue order (trims are writes of zeros).
    pending: Vec<(u64, Vec<u8>)>,
    /// Device calls so far (writes, syncs, trims).
    calls: u64,
    /// The call during which the power fails.
    crash_at_call: Option<u64>,
    crashed: bool,
    rng: u64,
    /// Torn sectors may hold garbage, not only old or new bytes.
    garbage: bool,
}

impl CrashDevice {
    pub fn new(capacity_bytes: u64) -> CrashDevice {
        CrashDevice::from_image(vec![0; capacity_bytes as usize])
    }
    pub fn from_image(durable: Vec<u8>) -> CrashDevice {
        CrashDevice {
            capacity_bytes: durable.len() as u64,
            inner: Mutex::new(Inner {
                durable,
                pending: Vec::new(),
                calls: 0,
                crash_at_call: None,
                crashed: false,
                rng: 1,
                garbage: false,
            }),
        }
    }
    /// Fails the power during the `call`-th device call from now, tearing with `seed`.
    pub fn arm(&self, call: u64, seed: u64, garbage: bool) {
        let mut inner = self.inner.lock().unwrap();
        inner.crash_at_call = Some(inner.calls + call);
        inner.rng = seed | 1;
        inner.garbage = garbage;
    }
    pub fn crashed(&self) -> bool {
        self.inner.lock().unwrap().crashed
    }
    /// What the media holds after the power failure (or now, counting only synced writes).
    pub fn durable_image(&self) -> Vec<u8> {
        self.inner.lock().unwrap().durable.clone()
    }

    fn call(&self, inner: &mut Inner, in_flight: &[(u64, Vec<u8>)]) -> Result<(), DeviceError> {
        if inner.crashed {
            return Err(DeviceError::PowerLost);
        }
        inner.calls += 1;
        if inner.crash_at_call != Some(inner.calls) {
            return Ok(());
        }
        inner.crashed = true;
        let mut writes = std::mem::take(&mut inner.pending);
        writes.extend(in_flight.iter().cloned());
        for (offset, data) in writes {
            // Per 4 KiB block: all old, all new, or torn sector by sector, so that a torn flush
            // leaves both intact stragglers and torn blocks behind.
            let mut block_fate = 0;
            for (i, sector) in data.chunks(SECTOR_BYTES).enumerate() {
                let at = offset as usize + i * SECTOR_BYTES;
                if i % (BLOCK_BYTES as usize / SECTOR_BYTES) == 0 {
                    block_fate = next(&mut inner.rng) % 5;
                }
                let fate = match block_fate {
                    0 | 1 => 0,
                    2 | 3 => 1,
                    _ => next(&mut inner.rng) % 3,
                };
                match fate {
                    0 => {}
                    1 => inner.durable[at..at + sector.len()].copy_from_slice(sector),
                    _ if inner.garbage => {
                        for b in &mut inner.durable[at..at + sector.len()] {
                            *b = next(&mut inner.rng) as u8;
                        }
                    }
                    _ => inner.durable[at..at + sector.len()].copy_from_slice(sector),
                }
            }
        }
        Err(DeviceError::PowerLost)
    }
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: enough for choosing sectors.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl Device for CrashDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        let inner = self.inner.lock().unwrap();
        if inner.crashed {
            return Err(DeviceError::PowerLost);
        }
        for op in ops.iter_mut() {
            check_range(op.offset, op.buf.len() as u64, self.capacity_bytes)?;
            let (start, end) = (op.offset as usize, op.offset as usize + op.buf.len());
            op.buf.copy_from_slice(&inner.durable[start..end]);
            // Unsynced writes are visible to reads, in issue order.
            for (offset, data) in &inner.pending {
                let (ws, we) = (*offset as usize, *offset as usize + data.len());
                let (s, e) = (ws.max(start), we.min(end));
                if s < e {
                    op.buf[s - start..e - start].copy_from_slice(&data[s - ws..e - ws]);
                }
            }
        }
        Ok(())
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity_bytes)?;
        }
        let mut inner = self.inner.lock().unwrap();
        let writes: Vec<(u64, Vec<u8>)> =
            ops.iter().map(|op| (op.offset, op.data.to_vec())).collect();
        self.call(&mut inner, &writes)?;
        inner.pending.extend(writes);
        Ok(())
    }
    fn sync(&self) -> Result<(), DeviceError> {
        let mut inner = self.inner.lock().unwrap();
        self.call(&mut inner, &[])?;
        for (offset, data) in std::mem::take(&mut inner.pending) {
            inner.durable[offset as usize..offset as usize + data.len()].copy_from_slice(&data);
        }
        Ok(())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity_bytes)?;
        let mut inner = self.inner.lock().unwrap();
        let zeros = vec![(offset, vec![0u8; len as usize])];
        self.call(&mut inner, &zeros)?;
        inner.pending.extend(zeros);
        Ok(())
    }
}
