//! The appending side of the log: framing into the buffer, group commit, flushing, truncation.
//!
//! One mutex guards the buffer and positions; device I/O happens outside it, by one leader at a
//! time, so appenders keep filling the buffer while a flush is on the device. A flush always
//! writes every block appended so far and *closes* a partially filled tail block (padding), so
//! every log block is written exactly once per lap: a torn flush can only damage blocks that
//! hold nothing acknowledged (see docs/internals/wal.md, "Why the tail block is never rewritten").
use super::format::{
    self, BlockHeader, Header, RecordFormat, BLOCK, BLOCK_DATA_BYTES, BLOCK_HEADER_BYTES,
    HEADER_BLOCKS,
};
use super::stats::WalStats;
use super::{Durability, Lsn, WalError, WalOptions};
use crate::device::{Device, DeviceError, Placement, WriteOp, WritePurpose};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// The log, shared by reference between threads (`Arc<Wal>`).
#[derive(Debug)]
pub struct Wal {
    device: Arc<dyn Device>,
    options: WalOptions,
    log_id: u64,
    epoch: u32,
    area_start_block: u64,
    area_blocks: u64,
    /// How this incarnation frames its records (compact; wide only in tests of old logs).
    record_format: RecordFormat,
    state: Mutex<State>,
    /// Signalled when a flush ends (durable position advanced, or the log got poisoned).
    flushed: Condvar,
    /// Wakes a gathering group-commit leader early.
    gather: Condvar,
    /// Serialises header writes (truncation); holds the last header written.
    header: Mutex<Header>,
    stats: WalStats,
    /// Runs before each flush writes log blocks (`Wal::set_before_write`).
    before_write: OnceLock<BeforeWrite>,
}

/// What must be durable before the log writes records that may depend on it (out-of-line
/// values the records name: `crate::blob`). Runs outside the log's lock, by the flush leader.
pub struct BeforeWrite(pub Box<dyn Fn() -> Result<(), DeviceError> + Send + Sync>);

impl std::fmt::Debug for BeforeWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeWrite")
    }
}

#[derive(Debug)]
struct State {
    /// Images of log blocks `buf_first_block..`, whole blocks; the last one is the open tail.
    buf: Vec<u8>,
    /// The previous flush's buffer, kept to avoid reallocating.
    spare: Vec<u8>,
    buf_first_block: u64,
    /// Where the next record goes. Invariant: `next_lsn % BLOCK >= BLOCK_HEADER_BYTES` and its
    /// block is the open tail block of `buf`.
    next_lsn: u64,
    /// Every record below this position is durable. Always a record boundary.
    durable_lsn: u64,
    /// Block-aligned position below which every block was written and synced.
    synced_lsn: u64,
    /// Oldest retained position (the header's start): the circular area ends one lap after it.
    start_lsn: u64,
    /// A leader is gathering or flushing; nobody else starts a flush.
    leader: bool,
    /// A `Sync` committer waits: a gathering leader should stop gathering.
    urgent: bool,
    /// Committers waiting for durability (for the group size histogram).
    waiting: u64,
    poisoned: bool,
}

/// Where a recovered (or new) log continues.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resume {
    pub next_lsn: u64,
    pub synced_lsn: u64,
}

impl State {
    fn buffered_bytes(&self) -> u64 {
        self.next_lsn - self.buf_first_block * BLOCK as u64
    }
}

impl Wal {
    /// Formats `device` as an empty log using all of it, and returns the log ready to append.
    pub fn create(device: Arc<dyn Device>, options: WalOptions) -> Result<Wal, WalError> {
        options.validate()?;
        let capacity_blocks = device.capacity_bytes() / BLOCK as u64;
        let min_blocks = HEADER_BLOCKS + 2 * options.buffer_blocks as u64;
        if capacity_blocks < min_blocks {
            return Err(WalError::DeviceTooSmall {
                capacity_bytes: device.capacity_bytes(),
                min_bytes: min_blocks * BLOCK as u64,
            });
        }
        let area_blocks = capacity_blocks - HEADER_BLOCKS;
        let header = Header {
            seq: 1,
            log_id: random_u64(),
            epoch: 1,
            max_flush_blocks: options.buffer_blocks,
            area_start_block: HEADER_BLOCKS,
            area_blocks,
            start_lsn: BLOCK_HEADER_BYTES as u64,
        };
        // Old contents of the area can never pass for this log (other log_id), but a trim tells
        // a flash device they are dead. Not every backend can trim.
        if options.trim {
            match device.trim(HEADER_BLOCKS * BLOCK as u64, area_blocks * BLOCK as u64) {
                Ok(()) | Err(DeviceError::Unsupported(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut block = vec![0u8; BLOCK];
        format::encode_header(&header, &mut block);
        device.write_batch(&[
            WriteOp {
                offset: 0,
                data: &block,
                purpose: options.purpose,
                placement: Placement::None,
            },
            WriteOp {
                offset: BLOCK as u64,
                data: &block,
                purpose: options.purpose,
                placement: Placement::None,
            },
        ])?;
        device.sync()?;
        let wal = Wal::start(
            device,
            options,
            header,
            Resume { next_lsn: BLOCK_HEADER_BYTES as u64, synced_lsn: 0 },
        );
        wal.stats.record_header_write(2 * BLOCK as u64);
        Ok(wal)
    }

    /// Opens an existing log for recovery, reading from its oldest retained record.
    pub fn open(
        device: Arc<dyn Device>,
        options: WalOptions,
    ) -> Result<super::WalRecovery, WalError> {
        super::WalRecovery::open(device, options, None)
    }

    /// Opens an existing log for recovery, reading from `from` (a checkpoint's LSN: a record
    /// boundary at or after the log start).
    pub fn open_from(
        device: Arc<dyn Device>,
        options: WalOptions,
        from: Lsn,
    ) -> Result<super::WalRecovery, WalError> {
        super::WalRecovery::open(device, options, Some(from))
    }

    /// A log that appends at `resume` under `header` (already durable, with this incarnation's
    /// epoch).
    pub(crate) fn start(
        device: Arc<dyn Device>,
        options: WalOptions,
        header: Header,
        resume: Resume,
    ) -> Wal {
        assert!(resume.next_lsn % BLOCK as u64 == BLOCK_HEADER_BYTES as u64);
        assert!(resume.synced_lsn <= resume.next_lsn);
        assert!(header.start_lsn <= resume.next_lsn);
        let buf_first_block = resume.next_lsn / BLOCK as u64;
        let mut state = State {
            buf: Vec::with_capacity(options.buffer_blocks as usize * BLOCK),
            spare: Vec::with_capacity(options.buffer_blocks as usize * BLOCK),
            buf_first_block,
            next_lsn: buf_first_block * BLOCK as u64,
            durable_lsn: resume.next_lsn,
            synced_lsn: resume.synced_lsn,
            start_lsn: header.start_lsn,
            leader: false,
            urgent: false,
            waiting: 0,
            poisoned: false,
        };
        open_block(&mut state, 0);
        assert_eq!(state.next_lsn, resume.next_lsn);
        Wal {
            device,
            options,
            log_id: header.log_id,
            epoch: header.epoch,
            area_start_block: header.area_start_block,
            area_blocks: header.area_blocks,
            record_format: RecordFormat::Compact,
            state: Mutex::new(state),
            flushed: Condvar::new(),
            gather: Condvar::new(),
            header: Mutex::new(header),
            stats: WalStats::default(),
            before_write: OnceLock::new(),
        }
    }

    /// This log framing its records as earlier builds did: tests of reading their logs.
    #[cfg(test)]
    pub(crate) fn with_record_format(mut self, format: RecordFormat) -> Wal {
        let st = self.lock();
        assert_eq!(st.buf.len(), BLOCK, "the format changes only before the first append");
        drop(st);
        self.record_format = format;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves State consistent for our purposes: every
        // mutation that matters is completed before any call that could panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn stats(&self) -> &WalStats {
        &self.stats
    }
    pub fn options(&self) -> &WalOptions {
        &self.options
    }
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }
    /// Every record below this position is durable.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.lock().durable_lsn)
    }
    /// Where the next record will go (the end of the log in memory).
    pub fn next_lsn(&self) -> Lsn {
        Lsn(self.lock().next_lsn)
    }
    /// Oldest retained position.
    pub fn start_lsn(&self) -> Lsn {
        Lsn(self.lock().start_lsn)
    }
    /// Log bytes retained, `next_lsn - start_lsn`, read under one lock: two separate reads can
    /// see a truncation that happened after the first, so start past a stale next.
    pub fn retained_bytes(&self) -> u64 {
        let st = self.lock();
        assert!(
            st.next_lsn >= st.start_lsn,
            "log start {} past its end {}",
            st.start_lsn,
            st.next_lsn
        );
        st.next_lsn - st.start_lsn
    }
    /// Bytes of the circular area: the most log that can be retained between checkpoints.
    pub fn capacity_bytes(&self) -> u64 {
        self.area_blocks * BLOCK as u64
    }
    /// Incarnation number written into this run's blocks.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Frames a record into the buffer and returns its LSN. Not durable until committed.
    /// Waits (flushing) when the buffer is full; fails with `LogFull` when the circular area has
    /// no room before the log start, which only [`Wal::truncate_before`] frees. The log does not
    /// block on a full area because the thread that would have to checkpoint may be this one.
    pub fn append(&self, kind: u8, payload: &[u8]) -> Result<Lsn, WalError> {
        let max = self.options.max_payload_bytes();
        if payload.len() > max {
            return Err(WalError::RecordTooLarge { len: payload.len(), max });
        }
        let header_bytes = self.record_format.header_bytes();
        let total_bytes = header_bytes + payload.len();
        let mut st = self.lock();
        // Each round either appends, fails, or waits for a flush that empties the buffer.
        loop {
            if st.poisoned {
                return Err(WalError::Poisoned);
            }
            let offset = (st.next_lsn % BLOCK as u64) as usize;
            let room_in_tail = BLOCK - offset;
            let new_blocks = total_bytes.saturating_sub(room_in_tail).div_ceil(BLOCK_DATA_BYTES);
            let last_block = st.next_lsn / BLOCK as u64 + new_blocks as u64;
            let limit_block = st.start_lsn / BLOCK as u64 + self.area_blocks;
            if last_block >= limit_block {
                return Err(WalError::LogFull {
                    needed_bytes: (last_block + 1 - limit_block) * BLOCK as u64,
                    start_lsn: Lsn(st.start_lsn),
                });
            }
            let buf_blocks = st.buf.len() / BLOCK;
            if buf_blocks + new_blocks <= self.options.buffer_blocks as usize {
                break;
            }
            // Back-pressure: the buffer is full; flush it (or wait for the flush under way,
            // telling a gathering leader to stop gathering: nothing more fits anyway).
            st = if st.leader {
                st.urgent = true;
                self.gather.notify_all();
                self.flushed.wait(st).unwrap_or_else(|e| e.into_inner())
            } else {
                self.flush_locked(st, None)?
            };
        }
        let lsn = st.next_lsn;
        let mut header = [0u8; format::WIDE_RECORD_HEADER_BYTES];
        let header = &mut header[..header_bytes];
        format::encode_record_header(self.record_format, lsn, kind, payload, header);
        let mut remaining = total_bytes;
        for part in [&header[..], payload] {
            let mut part = part;
            // At most one round per block the record touches.
            while !part.is_empty() {
                let offset = (st.next_lsn % BLOCK as u64) as usize;
                let n = part.len().min(BLOCK - offset);
                let at = st.buf.len() - BLOCK + offset;
                st.buf[at..at + n].copy_from_slice(&part[..n]);
                st.next_lsn += n as u64;
                part = &part[n..];
                remaining -= n;
                if st.next_lsn.is_multiple_of(BLOCK as u64) {
                    // Keep the invariant: the append position is always in an open block.
                    open_block(&mut st, remaining.min(BLOCK_DATA_BYTES) as u16);
                }
            }
        }
        assert_eq!(remaining, 0);
        self.stats.record_append(payload.len());
        if st.leader && st.buffered_bytes() >= self.options.group_commit_bytes {
            self.gather.notify_all();
        }
        Ok(Lsn(lsn))
    }

    /// Makes the record at `lsn` (and everything before it) durable as `durability` says.
    pub fn commit(&self, lsn: Lsn, durability: Durability) -> Result<(), WalError> {
        self.stats.record_commit(durability);
        let delay = match durability {
            Durability::None => return Ok(()),
            Durability::Sync => None,
            Durability::GroupCommit { max_delay } => Some(max_delay),
        };
        let mut st = self.lock();
        assert!(lsn.0 < st.next_lsn, "commit of lsn {lsn} that was never appended");
        st.waiting += 1;
        if durability == Durability::Sync && st.leader {
            st.urgent = true;
            self.gather.notify_all();
        }
        let max_waiters = self.options.group_commit_max_waiters as u64;
        if st.leader && max_waiters > 0 && st.waiting >= max_waiters {
            self.gather.notify_all();
        }
        // Each round ends with a flush finished (ours or another leader's) or an error.
        let result = loop {
            if st.durable_lsn > lsn.0 {
                break Ok(());
            }
            if st.poisoned {
                break Err(WalError::Poisoned);
            }
            if st.leader {
                st = self.flushed.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            match self.flush_locked(st, delay) {
                Ok(guard) => st = guard,
                Err(e) => {
                    st = self.lock();
                    break Err(e);
                }
            }
        };
        st.waiting -= 1;
        result
    }

    /// Writes and syncs everything appended so far.
    pub fn flush(&self) -> Result<(), WalError> {
        let mut st = self.lock();
        let target = st.next_lsn;
        // Each round ends with a flush finished or an error.
        loop {
            if st.durable_lsn >= target {
                return Ok(());
            }
            if st.poisoned {
                return Err(WalError::Poisoned);
            }
            st = if st.leader {
                self.flushed.wait(st).unwrap_or_else(|e| e.into_inner())
            } else {
                self.flush_locked(st, None)?
            };
        }
    }

    /// Flushes and consumes the log. Dropping a `Wal` without `close` loses what was not flushed,
    /// exactly like a crash (there is no hidden flush in `Drop`).
    pub fn close(self) -> Result<(), WalError> {
        self.flush()
    }

    /// Leads one flush: optionally gathers committers for up to `gather`, then writes every
    /// buffered block (closing a partial tail block), syncs, and publishes the new durable
    /// position. Called with the lock held and no leader; returns with the lock held.
    fn flush_locked<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        gather: Option<std::time::Duration>,
    ) -> Result<MutexGuard<'a, State>, WalError> {
        assert!(!st.leader);
        st.leader = true;
        if let Some(delay) = gather {
            st = self.gather_committers(st, delay);
        }
        st.urgent = false;
        let padding_bytes = close_tail(&mut st);
        // Every block but the (empty) open tail goes to the device.
        let write_blocks = st.buf.len() / BLOCK - 1;
        if write_blocks == 0 {
            // Nothing buffered: every earlier flush completed, so everything appended is durable
            // (callers loop on `durable_lsn`, which this must therefore already satisfy).
            assert_eq!(st.durable_lsn, st.next_lsn);
            st.leader = false;
            self.flushed.notify_all();
            return Ok(st);
        }
        let first_block = st.buf_first_block;
        self.seal_blocks(&mut st, write_blocks);
        let out = take_sealed(&mut st, write_blocks);
        let target_durable = st.next_lsn;
        let group_size = st.waiting;
        drop(st);

        let io = self
            .run_before_write()
            .and_then(|()| self.write_blocks(first_block, &out))
            .and_then(|()| self.device.sync());

        let mut st = self.lock();
        st.leader = false;
        match io {
            Ok(()) => {
                assert!(target_durable > st.durable_lsn);
                st.durable_lsn = target_durable;
                st.synced_lsn = (first_block + write_blocks as u64) * BLOCK as u64;
                self.stats.record_flush(out.len() as u64, padding_bytes, group_size);
                // The written buffer becomes the next flush's spare: no allocation per flush.
                let mut out = out;
                out.clear();
                st.spare = out;
                self.flushed.notify_all();
                Ok(st)
            }
            Err(e) => {
                st.poisoned = true;
                self.flushed.notify_all();
                Err(e.into())
            }
        }
    }

    /// A group-commit leader waits, up to `delay`, for more committers to join its flush. Stops
    /// early on a `Sync` committer, a poisoned log, a full group (bytes or waiters).
    fn gather_committers<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        delay: std::time::Duration,
    ) -> MutexGuard<'a, State> {
        let deadline = Instant::now() + delay;
        // Bounded by the deadline: every round waits until it or an early-stop signal.
        loop {
            let now = Instant::now();
            let max_waiters = self.options.group_commit_max_waiters as u64;
            if now >= deadline
                || st.urgent
                || st.poisoned
                || st.buffered_bytes() >= self.options.group_commit_bytes
                || (max_waiters > 0 && st.waiting >= max_waiters)
            {
                return st;
            }
            st = self.gather.wait_timeout(st, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Writes the final headers of the first `write_blocks` buffered blocks and seals them
    /// (checksum), so they are ready for the device.
    fn seal_blocks(&self, st: &mut State, write_blocks: usize) {
        let first_block = st.buf_first_block;
        let synced_lsn = st.synced_lsn;
        for i in 0..write_blocks {
            let block = &mut st.buf[i * BLOCK..(i + 1) * BLOCK];
            let used = format::block_used(block);
            let header = BlockHeader {
                log_id: self.log_id,
                block_lsn: (first_block + i as u64) * BLOCK as u64,
                synced_lsn,
                epoch: self.epoch,
                used: used as u16,
                carry: format::block_carry(block),
                format: self.record_format,
            };
            format::encode_block_header(&header, block);
            format::seal_block(block);
        }
    }

    /// Installs the hook every flush runs before it writes (once per log).
    pub fn set_before_write(&self, hook: BeforeWrite) -> Result<(), WalError> {
        self.before_write
            .set(hook)
            .map_err(|_| WalError::Device(DeviceError::Unsupported("a second before-write hook")))
    }

    /// Whether a before-write hook is installed.
    pub fn has_before_write(&self) -> bool {
        self.before_write.get().is_some()
    }

    fn run_before_write(&self) -> Result<(), DeviceError> {
        match self.before_write.get() {
            Some(hook) => (hook.0)(),
            None => Ok(()),
        }
    }

    /// Writes consecutive log blocks starting at `first_block`, split where the circular area
    /// wraps, as one batch.
    fn write_blocks(&self, first_block: u64, data: &[u8]) -> Result<(), DeviceError> {
        assert!(data.len().is_multiple_of(BLOCK) && !data.is_empty());
        let blocks = (data.len() / BLOCK) as u64;
        assert!(blocks <= self.area_blocks);
        let slot = first_block % self.area_blocks;
        let before_wrap = blocks.min(self.area_blocks - slot);
        let area_start_block = self.area_start_block;
        let purpose = self.options.purpose;
        fn op(
            area_start_block: u64,
            slot: u64,
            bytes: &[u8],
            purpose: WritePurpose,
        ) -> WriteOp<'_> {
            WriteOp {
                offset: (area_start_block + slot) * BLOCK as u64,
                data: bytes,
                purpose,
                placement: Placement::None,
            }
        }
        let split = before_wrap as usize * BLOCK;
        if split == data.len() {
            self.device.write_batch(&[op(area_start_block, slot, data, purpose)])
        } else {
            let (a, b) = data.split_at(split);
            self.device.write_batch(&[
                op(area_start_block, slot, a, purpose),
                op(area_start_block, 0, b, purpose),
            ])
        }
    }

    /// Frees the log before `lsn` (a checkpoint's LSN: a record boundary, durable). The new
    /// start is made durable in the header before the freed blocks are trimmed or reused.
    pub fn truncate_before(&self, lsn: Lsn) -> Result<(), WalError> {
        let mut header = self.header.lock().unwrap_or_else(|e| e.into_inner());
        let old_start = {
            let st = self.lock();
            if st.poisoned {
                return Err(WalError::Poisoned);
            }
            let bad = |reason| WalError::BadLsn {
                lsn,
                start: Lsn(st.start_lsn),
                end: Lsn(st.durable_lsn),
                reason,
            };
            if lsn.0 < st.start_lsn {
                return Err(bad("truncation point before the log start"));
            }
            if lsn.0 > st.durable_lsn {
                return Err(bad("truncation point beyond the durable log"));
            }
            if (lsn.0 % BLOCK as u64) < BLOCK_HEADER_BYTES as u64 {
                return Err(bad("truncation point inside a block header"));
            }
            st.start_lsn
        };
        if lsn.0 == old_start {
            return Ok(());
        }
        let mut next = *header;
        next.seq += 1;
        next.start_lsn = lsn.0;
        write_header(self.device.as_ref(), &next, self.options.purpose)
            .inspect_err(|_| self.poison())?;
        self.stats.record_header_write(BLOCK as u64);
        *header = next;
        // Trim only now (the header no longer points there) and before publishing the new start
        // (after which the writer may reuse these slots and a late trim would erase new blocks).
        if self.options.trim {
            self.trim_blocks(old_start / BLOCK as u64, lsn.0 / BLOCK as u64)?;
        }
        self.lock().start_lsn = lsn.0;
        Ok(())
    }

    fn trim_blocks(&self, first_block: u64, end_block: u64) -> Result<(), WalError> {
        assert!(first_block <= end_block);
        assert!(end_block - first_block <= self.area_blocks);
        let mut block = first_block;
        // At most two rounds: the range splits once where the circular area wraps.
        for _ in 0..2 {
            if block == end_block {
                break;
            }
            let slot = block % self.area_blocks;
            let n = (end_block - block).min(self.area_blocks - slot);
            let offset = (self.area_start_block + slot) * BLOCK as u64;
            match self.device.trim(offset, n * BLOCK as u64) {
                Ok(()) | Err(DeviceError::Unsupported(_)) => {}
                Err(e) => return Err(e.into()),
            }
            block += n;
        }
        assert_eq!(block, end_block);
        Ok(())
    }

    fn poison(&self) {
        self.lock().poisoned = true;
        self.flushed.notify_all();
    }
}

/// Writes `header` into its slot (`seq % 2`) and syncs. The other slot keeps the previous
/// header, so a torn write here loses nothing.
pub(crate) fn write_header(
    device: &dyn Device,
    header: &Header,
    purpose: WritePurpose,
) -> Result<(), DeviceError> {
    let mut block = vec![0u8; BLOCK];
    format::encode_header(header, &mut block);
    device.write_at((header.seq % HEADER_BLOCKS) * BLOCK as u64, &block, purpose)?;
    device.sync()
}

/// Appends a fresh block to the buffer at `next_lsn` (a block boundary) and moves `next_lsn`
/// past its header. `carry`: bytes of the record in progress that will land in it.
/// Closes a partially filled tail block: it is written once, now, and never again this lap,
/// and appending continues in a fresh block. Returns the padding this costs.
fn close_tail(st: &mut State) -> u64 {
    let tail_offset = (st.next_lsn % BLOCK as u64) as usize;
    if tail_offset <= BLOCK_HEADER_BYTES {
        return 0;
    }
    let at = st.buf.len() - BLOCK;
    format::put_block_used(&mut st.buf[at..], tail_offset);
    st.next_lsn = st.next_lsn - tail_offset as u64 + BLOCK as u64;
    open_block(st, 0);
    (BLOCK - tail_offset) as u64
}

/// Hands the first `write_blocks` sealed blocks to the I/O and keeps only the open tail in the
/// buffer. The two buffers swap roles (the spare takes the tail), so neither is reallocated
/// once both have grown to a flush's size.
fn take_sealed(st: &mut State, write_blocks: usize) -> Vec<u8> {
    let mut out = std::mem::take(&mut st.spare);
    out.clear();
    std::mem::swap(&mut out, &mut st.buf);
    st.buf.extend_from_slice(&out[write_blocks * BLOCK..]);
    out.truncate(write_blocks * BLOCK);
    st.buf_first_block += write_blocks as u64;
    out
}

fn open_block(st: &mut State, carry: u16) {
    assert!(st.next_lsn.is_multiple_of(BLOCK as u64));
    assert_eq!(st.next_lsn / BLOCK as u64, st.buf_first_block + (st.buf.len() / BLOCK) as u64);
    let at = st.buf.len();
    st.buf.resize(at + BLOCK, 0);
    format::put_block_carry(&mut st.buf[at..], carry);
    format::put_block_used(&mut st.buf[at..], BLOCK);
    st.next_lsn += BLOCK_HEADER_BYTES as u64;
}

/// A random identity for a new log, from the standard library's per-process random hash keys
/// mixed with the clock (no random-number crate is a dependency).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    h.write_u64(nanos);
    h.finish()
}
