//! A device for crash tests: fails I/Os on command and loses power on command.
//!
//! Modelled on TigerBeetle's simulated storage (src/testing/storage.zig: pristine bytes plus
//! faults, `reset()` tears in-flight writes) and redb's crash-consistency backend (durability
//! frozen at the Nth sync). The device keeps two images: what reads see (every write applied),
//! and what is durable (only writes a sync covered), plus the ordered list of writes since the
//! last sync. A power cut builds the post-crash image from the durable one by replaying each
//! unsynced write as dropped, kept, or torn, where a torn write keeps each 512-byte sector
//! independently old or new (the atomic unit of a real drive is the sector, not the page).
//!
//! Every I/O has a number (each op of a batch, each sync, each trim), so a test can say "crash at
//! I/O n" for a random n below a previous run's `io_count()`. Everything is deterministic from
//! the test's choices and the power-cut seed.
use super::capacity::Capacity;
use super::{check_range, Device, DeviceError, ReadOp, WriteOp};
use crate::rng::SplitMix64;
use std::sync::{Mutex, MutexGuard};

/// Torn writes are torn at this granularity.
pub const SECTOR_BYTES: usize = 512;

/// Bound on unsynced bytes held for tearing; a test that writes more without a sync is broken.
const PENDING_BYTES_MAX: u64 = 1 << 32;

/// The kinds of I/O a fault can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    Read = 0,
    Write = 1,
    Sync = 2,
    Trim = 3,
}

/// What a power cut did to the unsynced writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrashSummary {
    pub seed: u64,
    /// Writes (and trims) not yet covered by a sync when power was lost.
    pub unsynced_writes: u64,
    pub dropped_writes: u64,
    pub kept_writes: u64,
    pub torn_writes: u64,
    /// True when durability was frozen by `freeze_durability_at_sync`: all unsynced writes and
    /// every write after the freeze were lost.
    pub frozen: bool,
}

#[derive(Debug)]
struct PendingWrite {
    offset: u64,
    /// New contents; a trim is a write of zeros.
    data: Vec<u8>,
}

#[derive(Debug, Default)]
struct Faults {
    /// Fail I/O number n (all kinds counted together), once.
    fail_at_io: Option<u64>,
    /// Fail the nth I/O of a kind (counting that kind only), once.
    fail_nth: Option<(IoKind, u64)>,
    /// Fail every I/O numbered n or later.
    fail_after_io: Option<u64>,
    /// Lose power at I/O number n: the batch in progress is in flight, later I/O sees PowerLost.
    crash_at_io: Option<u64>,
    /// Syncs numbered n or later (0-based) report success but make nothing durable.
    freeze_at_sync: Option<u64>,
}

#[derive(Debug)]
struct State {
    visible: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<PendingWrite>,
    pending_bytes: u64,
    io_count: u64,
    kind_counts: [u64; 4],
    sync_count: u64,
    faults: Faults,
    powered: bool,
}

#[derive(Debug)]
pub struct FaultDevice {
    /// Grows by `grow_to` (durably at once: a power cut keeps the size, as a synced
    /// `fallocate` does), up to the limit `with_growth` sets.
    capacity: Capacity,
    state: Mutex<State>,
    /// Set on a device built by `power_cut`: how its image came about.
    crash: Option<CrashSummary>,
}

/// What the fault check decided for one I/O.
enum Verdict {
    Proceed,
    Fail(DeviceError),
    PowerLost,
}

impl FaultDevice {
    pub fn new(capacity_bytes: u64) -> FaultDevice {
        FaultDevice::from_image(capacity_bytes, Vec::new(), None)
    }

    fn from_image(capacity_bytes: u64, image: Vec<u8>, crash: Option<CrashSummary>) -> FaultDevice {
        assert!(capacity_bytes.is_multiple_of(super::BLOCK_BYTES), "capacity must be whole blocks");
        assert!(image.len() as u64 <= capacity_bytes);
        let state = State {
            visible: image.clone(),
            durable: image,
            pending: Vec::new(),
            pending_bytes: 0,
            io_count: 0,
            kind_counts: [0; 4],
            sync_count: 0,
            faults: Faults::default(),
            powered: true,
        };
        FaultDevice { capacity: Capacity::fixed(capacity_bytes), state: Mutex::new(state), crash }
    }

    /// Lets `grow_to` extend the device up to `max_bytes` (a file on a filesystem that size).
    pub fn with_growth(mut self, max_bytes: u64) -> FaultDevice {
        self.capacity = Capacity::growable(self.capacity(), max_bytes);
        self
    }

    fn capacity(&self) -> u64 {
        self.capacity.bytes()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// I/Os attempted so far (each op of a batch, each sync and trim), including failed ones.
    pub fn io_count(&self) -> u64 {
        self.state().io_count
    }
    /// I/Os of one kind attempted so far.
    pub fn io_count_of(&self, kind: IoKind) -> u64 {
        self.state().kind_counts[kind as usize]
    }
    /// Syncs that succeeded.
    pub fn sync_count(&self) -> u64 {
        self.state().sync_count
    }
    /// Writes and trims not yet covered by a sync.
    pub fn unsynced_writes(&self) -> usize {
        self.state().pending.len()
    }
    pub fn is_powered(&self) -> bool {
        self.state().powered
    }
    /// How this device's image was produced, when it came from [`FaultDevice::power_cut`].
    pub fn crash_summary(&self) -> Option<CrashSummary> {
        self.crash
    }

    /// Fails I/O number `io` (as counted by [`FaultDevice::io_count`]) with `Injected`.
    pub fn fail_io_at(&self, io: u64) {
        self.state().faults.fail_at_io = Some(io);
    }
    /// Fails the `n`th (0-based) I/O of `kind`, counting from the device's creation.
    pub fn fail_nth(&self, kind: IoKind, n: u64) {
        self.state().faults.fail_nth = Some((kind, n));
    }
    /// Fails every I/O numbered `io` or later.
    pub fn fail_all_after(&self, io: u64) {
        self.state().faults.fail_after_io = Some(io);
    }
    /// Loses power when I/O number `io` is issued (the batch holding it is in flight).
    pub fn crash_at_io(&self, io: u64) {
        self.state().faults.crash_at_io = Some(io);
    }
    /// Sync number `n` (0-based) and every later one succeed but make nothing durable, so the
    /// post-crash image is the state as of the first `n` syncs (redb's crash backend).
    pub fn freeze_durability_at_sync(&self, n: u64) {
        self.state().faults.freeze_at_sync = Some(n);
    }
    pub fn clear_faults(&self) {
        self.state().faults = Faults::default();
    }

    /// Cuts the power: this device answers every later I/O with `PowerLost`, and the returned
    /// device holds the post-crash image (durable bytes plus each unsynced write dropped, kept
    /// or torn at 512-byte sectors, chosen from `seed`), with no faults armed.
    pub fn power_cut(&self, seed: u64) -> FaultDevice {
        let mut state = self.state();
        state.powered = false;
        let frozen = is_frozen(&state);
        let mut image = state.durable.clone();
        let mut summary = CrashSummary {
            seed,
            unsynced_writes: state.pending.len() as u64,
            frozen,
            ..CrashSummary::default()
        };
        let mut rng = SplitMix64::new(seed);
        for write in state.pending.iter() {
            if frozen {
                summary.dropped_writes += 1;
                continue;
            }
            match rng.next_u64() % 3 {
                0 => summary.dropped_writes += 1,
                1 => {
                    apply(&mut image, write.offset, &write.data);
                    summary.kept_writes += 1;
                }
                _ => {
                    for (i, sector) in write.data.chunks(SECTOR_BYTES).enumerate() {
                        if rng.next_u64() & 1 == 1 {
                            apply(&mut image, write.offset + (i * SECTOR_BYTES) as u64, sector);
                        }
                    }
                    summary.torn_writes += 1;
                }
            }
        }
        let device = FaultDevice::from_image(self.capacity(), image, Some(summary));
        match self.capacity.max_bytes() {
            Some(max) => device.with_growth(max),
            None => device,
        }
    }

    /// Numbers the next I/O of `kind` and decides whether it fails.
    fn next_io(state: &mut State, kind: IoKind, offset: u64) -> Verdict {
        let io = state.io_count;
        let nth = state.kind_counts[kind as usize];
        state.io_count += 1;
        state.kind_counts[kind as usize] += 1;
        let f = &state.faults;
        if f.crash_at_io.is_some_and(|c| io >= c) {
            state.powered = false;
            return Verdict::PowerLost;
        }
        let hit = f.fail_at_io == Some(io)
            || f.fail_nth == Some((kind, nth))
            || f.fail_after_io.is_some_and(|n| io >= n);
        if hit {
            let msg = format!("{kind:?} I/O #{io} ({kind:?} #{nth}) at offset {offset}");
            return Verdict::Fail(DeviceError::Injected(msg));
        }
        Verdict::Proceed
    }

    fn push_pending(state: &mut State, offset: u64, data: Vec<u8>) {
        state.pending_bytes += data.len() as u64;
        assert!(
            state.pending_bytes <= PENDING_BYTES_MAX,
            "too many unsynced bytes in a crash test"
        );
        state.pending.push(PendingWrite { offset, data });
    }
}

fn is_frozen(state: &State) -> bool {
    state.faults.freeze_at_sync.is_some_and(|n| state.sync_count >= n)
}

/// Writes `data` at `offset` into a lazily grown image.
fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

/// Fills `buf` from a lazily grown image (zeros past its end).
fn read_image(image: &[u8], offset: u64, buf: &mut [u8]) {
    let start = offset as usize;
    let end = start + buf.len();
    let have = image.len().clamp(start, end);
    if have > start {
        buf[..have - start].copy_from_slice(&image[start..have]);
    }
    buf[have - start..].fill(0);
}

impl Device for FaultDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity()
    }

    fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        self.capacity.check_growth(capacity_bytes)?;
        let mut state = self.state();
        if !state.powered {
            return Err(DeviceError::PowerLost);
        }
        // A growth is an allocation plus a sync: numbered (and faulted) as a sync.
        match Self::next_io(&mut state, IoKind::Sync, capacity_bytes) {
            Verdict::Proceed => {}
            Verdict::Fail(e) => return Err(e),
            Verdict::PowerLost => return Err(DeviceError::PowerLost),
        }
        self.capacity.raise(capacity_bytes);
        Ok(())
    }

    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter() {
            check_range(op.offset, op.buf.len() as u64, self.capacity())?;
        }
        let mut state = self.state();
        if !state.powered {
            return Err(DeviceError::PowerLost);
        }
        for op in ops.iter() {
            match Self::next_io(&mut state, IoKind::Read, op.offset) {
                Verdict::Proceed => {}
                Verdict::Fail(e) => return Err(e),
                Verdict::PowerLost => return Err(DeviceError::PowerLost),
            }
        }
        for op in ops.iter_mut() {
            read_image(&state.visible, op.offset, op.buf);
        }
        Ok(())
    }

    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity())?;
        }
        let mut state = self.state();
        if !state.powered {
            return Err(DeviceError::PowerLost);
        }
        // Decide the whole batch before touching anything: an injected failure changes nothing.
        for op in ops {
            match Self::next_io(&mut state, IoKind::Write, op.offset) {
                Verdict::Proceed => {}
                Verdict::Fail(e) => return Err(e),
                Verdict::PowerLost => {
                    // The whole batch was submitted: every op of it is in flight, to be dropped,
                    // kept or torn by the power cut.
                    for op in ops {
                        Self::push_pending(&mut state, op.offset, op.data.to_vec());
                    }
                    return Err(DeviceError::PowerLost);
                }
            }
        }
        for op in ops {
            apply(&mut state.visible, op.offset, op.data);
            Self::push_pending(&mut state, op.offset, op.data.to_vec());
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), DeviceError> {
        let mut state = self.state();
        if !state.powered {
            return Err(DeviceError::PowerLost);
        }
        match Self::next_io(&mut state, IoKind::Sync, 0) {
            Verdict::Proceed => {}
            Verdict::Fail(e) => return Err(e),
            Verdict::PowerLost => return Err(DeviceError::PowerLost),
        }
        let pending = std::mem::take(&mut state.pending);
        state.pending_bytes = 0;
        if !is_frozen(&state) {
            for write in &pending {
                apply(&mut state.durable, write.offset, &write.data);
            }
        }
        state.sync_count += 1;
        Ok(())
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity())?;
        let mut state = self.state();
        if !state.powered {
            return Err(DeviceError::PowerLost);
        }
        let zeros = vec![0u8; len as usize];
        match Self::next_io(&mut state, IoKind::Trim, offset) {
            Verdict::Proceed => {}
            Verdict::Fail(e) => return Err(e),
            Verdict::PowerLost => {
                Self::push_pending(&mut state, offset, zeros);
                return Err(DeviceError::PowerLost);
            }
        }
        // An unsynced trim is like an unsynced write of zeros: after a crash each sector reads
        // either the old bytes or zeros, which is what a real drive promises for a trim.
        apply(&mut state.visible, offset, &zeros);
        Self::push_pending(&mut state, offset, zeros);
        Ok(())
    }
}

#[cfg(test)]
#[path = "fault_tests.rs"]
mod tests;
