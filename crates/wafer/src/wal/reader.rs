//! Recovery: reads the log from its start (or a checkpoint's LSN), yields every record, finds
//! the end, and tells a torn tail (cut, reported) from damage to durable records (an error).
//!
//! The rule (docs/internals/wal.md, "Torn tail or corruption"): the first block that is not a valid block of
//! this log at its expected position ends the log, unless a later valid block of the current lap
//! says, in its `synced_lsn`, that the log had been synced past the bad block before it was
//! written: then the bad block was durable and its damage is corruption.
use super::format::{
    self, BlockHeader, BlockRead, Header, HeaderRead, RecordFormat, BLOCK, BLOCK_HEADER_BYTES,
    HEADER_BLOCKS, MAX_RECORD_PAYLOAD_BYTES,
};
use super::writer::{write_header, Resume};
use super::{Lsn, Wal, WalError, WalOptions, WalRecord};
use crate::device::Device;
use std::sync::Arc;

/// Blocks read per device request while scanning (1 MiB).
const READ_CHUNK_BLOCKS: u64 = 256;

/// What recovery found, returned by [`WalRecovery::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryReport {
    /// Oldest retained position (the header's truncation point).
    pub start_lsn: Lsn,
    /// Where reading began (`start_lsn` or the checkpoint's LSN).
    pub from_lsn: Lsn,
    /// Where appending continues: the start of the first block past the valid log.
    pub end_lsn: Lsn,
    pub records: u64,
    pub payload_bytes: u64,
    /// Log blocks read and verified (lookahead included).
    pub blocks_read: u64,
    /// Bytes cut at the tail: torn or stray blocks of the last, unsynced flush and the partial
    /// record they held. Zero after a clean shutdown.
    pub torn_tail_bytes: u64,
    /// Records cut mid-way by a crash and followed by a later incarnation's blocks.
    pub partial_records_dropped: u64,
    /// The epoch the reopened log writes with.
    pub new_epoch: u32,
}

/// An opened log being recovered: an iterator of records, then [`WalRecovery::finish`].
#[derive(Debug)]
pub struct WalRecovery {
    device: Arc<dyn Device>,
    options: WalOptions,
    header: Header,
    scan: Scanner,
    /// Set once the end was found; `finish` needs it.
    end_lsn: Option<u64>,
    /// Set once an error was returned: the log cannot be resumed.
    failed: bool,
}

#[derive(Debug)]
struct Scanner {
    device: Arc<dyn Device>,
    log_id: u64,
    area_start_block: u64,
    area_blocks: u64,
    start_lsn: u64,
    /// One lap after the start block: the first block that cannot belong to this log.
    limit_block: u64,
    max_epoch: u32,
    lookahead_blocks: u64,
    chunk: Vec<u8>,
    chunk_first_block: u64,
    /// Block whose data is being consumed; `None` before the first block is entered.
    block: Option<(u64, BlockHeader)>,
    /// Position of the next unread byte.
    pos: u64,
    last_epoch: u32,
    /// Bytes of the record being assembled (header, then payload); empty between records.
    partial: Vec<u8>,
    partial_lsn: u64,
    /// How the record being assembled is framed: its first block's format.
    partial_format: RecordFormat,
    /// The record being assembled began in an earlier block than the current one.
    partial_spans: bool,
    report: RecoveryReport,
}

impl WalRecovery {
    pub(crate) fn open(
        device: Arc<dyn Device>,
        options: WalOptions,
        from: Option<Lsn>,
    ) -> Result<WalRecovery, WalError> {
        options.validate()?;
        let header = read_header(device.as_ref())?;
        let from = from.map_or(header.start_lsn, |l| l.0);
        if from < header.start_lsn || (from % BLOCK as u64) < BLOCK_HEADER_BYTES as u64 {
            return Err(WalError::BadLsn {
                lsn: Lsn(from),
                start: Lsn(header.start_lsn),
                end: Lsn(u64::MAX),
                reason: "recovery must start at a record boundary at or after the log start",
            });
        }
        let lookahead_blocks =
            (options.recovery_lookahead_blocks as u64).max(2 * header.max_flush_blocks as u64 + 2);
        let scan = Scanner {
            device: device.clone(),
            log_id: header.log_id,
            start_lsn: header.start_lsn,
            area_start_block: header.area_start_block,
            area_blocks: header.area_blocks,
            limit_block: header.start_lsn / BLOCK as u64 + header.area_blocks,
            max_epoch: header.epoch,
            lookahead_blocks,
            chunk: Vec::new(),
            chunk_first_block: 0,
            block: None,
            pos: from,
            last_epoch: 0,
            partial: Vec::new(),
            partial_lsn: 0,
            partial_format: RecordFormat::Compact,
            partial_spans: false,
            report: RecoveryReport {
                start_lsn: Lsn(header.start_lsn),
                from_lsn: Lsn(from),
                end_lsn: Lsn(from),
                records: 0,
                payload_bytes: 0,
                blocks_read: 0,
                torn_tail_bytes: 0,
                partial_records_dropped: 0,
                new_epoch: header.epoch + 1,
            },
        };
        Ok(WalRecovery { device, options, header, scan, end_lsn: None, failed: false })
    }

    /// Oldest retained position.
    pub fn start_lsn(&self) -> Lsn {
        Lsn(self.header.start_lsn)
    }

    /// The next record, `None` at the end of the log.
    pub fn next_record(&mut self) -> Result<Option<WalRecord>, WalError> {
        if self.failed {
            return Err(WalError::Poisoned);
        }
        if self.end_lsn.is_some() {
            return Ok(None);
        }
        match self.scan.next_record() {
            Ok(Some(record)) => Ok(Some(record)),
            Ok(None) => {
                self.end_lsn = Some(self.scan.report.end_lsn.0);
                Ok(None)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Reads what is left (verifying it), makes a new epoch durable, and returns the log ready to
    /// append after the last valid record.
    pub fn finish(mut self) -> Result<(Wal, RecoveryReport), WalError> {
        // Bounded by the log area: every record consumes at least one byte of it.
        while self.next_record()?.is_some() {}
        let end_lsn = self.scan.report.end_lsn.0;
        assert!(end_lsn % BLOCK as u64 == BLOCK_HEADER_BYTES as u64);
        let mut header = self.header;
        header.seq += 1;
        header.epoch += 1;
        header.max_flush_blocks = header.max_flush_blocks.max(self.options.buffer_blocks);
        // The new epoch is durable before any block carries it: blocks the crashed incarnation
        // left past `end_lsn` (lower epoch) can then never pass for this incarnation's.
        write_header(self.device.as_ref(), &header, self.options.purpose)?;
        let resume = Resume { next_lsn: end_lsn, synced_lsn: end_lsn - BLOCK_HEADER_BYTES as u64 };
        let wal = Wal::start(self.device, self.options, header, resume);
        wal.stats().record_header_write(BLOCK as u64);
        Ok((wal, self.scan.report))
    }
}

impl Iterator for WalRecovery {
    type Item = Result<WalRecord, WalError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.next_record().transpose()
    }
}

/// Reads both header copies and picks the newest valid one, or says precisely why there is none.
fn read_header(device: &dyn Device) -> Result<Header, WalError> {
    let capacity_bytes = device.capacity_bytes();
    if capacity_bytes < HEADER_BLOCKS * BLOCK as u64 {
        return Err(WalError::Missing);
    }
    let mut blocks = vec![0u8; HEADER_BLOCKS as usize * BLOCK];
    device.read_at(0, &mut blocks)?;
    let reads = [format::decode_header(&blocks[..BLOCK]), format::decode_header(&blocks[BLOCK..])];
    let newest = reads
        .iter()
        .filter_map(|r| match r {
            HeaderRead::Valid(h) => Some(*h),
            _ => None,
        })
        .max_by_key(|h| h.seq);
    let header = match newest {
        Some(h) => h,
        None => {
            if let Some(found) = reads.iter().find_map(|r| match r {
                HeaderRead::Version(v) => Some(*v),
                _ => None,
            }) {
                return Err(WalError::UnsupportedVersion { found, supported: format::VERSION });
            }
            if reads.iter().all(|r| *r == HeaderRead::Zero) {
                return Err(WalError::Missing);
            }
            if reads.iter().all(|r| matches!(r, HeaderRead::Zero | HeaderRead::BadMagic)) {
                return Err(WalError::BadMagic);
            }
            return Err(WalError::CorruptHeader);
        }
    };
    if header.area_start_block < HEADER_BLOCKS
        || header.area_blocks < 2
        || (header.start_lsn % BLOCK as u64) < BLOCK_HEADER_BYTES as u64
        || header.max_flush_blocks == 0
        // Recovery writes the header back with both bumped.
        || header.epoch == u32::MAX
        || header.seq == u64::MAX
    {
        return Err(WalError::CorruptHeader);
    }
    // Positions up to one lap past the start must be representable, and so must the area's end.
    let area_bytes = header.area_blocks.checked_mul(BLOCK as u64);
    let lap_end = area_bytes.and_then(|a| a.checked_add(header.start_lsn));
    let expected_bytes = header
        .area_start_block
        .checked_add(header.area_blocks)
        .and_then(|blocks| blocks.checked_mul(BLOCK as u64));
    let (Some(expected_bytes), Some(_)) = (expected_bytes, lap_end) else {
        return Err(WalError::CorruptHeader);
    };
    if capacity_bytes < expected_bytes {
        return Err(WalError::Truncated { expected_bytes, actual_bytes: capacity_bytes });
    }
    Ok(header)
}

enum Enter {
    Entered,
    End,
}

impl Scanner {
    fn corrupt(&self, lsn: u64, reason: String) -> WalError {
        WalError::CorruptRecord { lsn: Lsn(lsn), reason }
    }

    /// The image of log block `index` (reading a chunk ahead when it is not loaded).
    fn load(&mut self, index: u64) -> Result<&[u8], WalError> {
        let chunk_blocks = (self.chunk.len() / BLOCK) as u64;
        let loaded =
            index >= self.chunk_first_block && index < self.chunk_first_block + chunk_blocks;
        if !loaded {
            let slot = index % self.area_blocks;
            let blocks = READ_CHUNK_BLOCKS
                .min(self.area_blocks - slot)
                .min(self.limit_block.saturating_sub(index).max(1));
            self.chunk.resize(blocks as usize * BLOCK, 0);
            let offset = (self.area_start_block + slot) * BLOCK as u64;
            self.device.read_at(offset, &mut self.chunk)?;
            self.chunk_first_block = index;
            self.report.blocks_read += blocks;
        }
        let at = ((index - self.chunk_first_block) as usize) * BLOCK;
        Ok(&self.chunk[at..at + BLOCK])
    }

    fn decode(&mut self, index: u64) -> Result<BlockRead, WalError> {
        let (log_id, expected) = (self.log_id, index * BLOCK as u64);
        let block = self.load(index)?;
        Ok(format::decode_block(block, log_id, expected))
    }

    fn next_record(&mut self) -> Result<Option<WalRecord>, WalError> {
        // Each round consumes bytes of the current block or enters the next one; blocks are
        // bounded by `limit_block`.
        loop {
            let (index, header) = match self.block {
                Some((index, header)) if self.pos < index * BLOCK as u64 + header.used as u64 => {
                    (index, header)
                }
                _ => match self.enter_next_block()? {
                    Enter::Entered => continue,
                    Enter::End => return Ok(None),
                },
            };
            if self.read_record_bytes(index, &header)? {
                return self.finish_record(index * BLOCK as u64, &header).map(Some);
            }
        }
    }

    /// Copies the next bytes of the record being assembled from block `index` (its header,
    /// then its payload, up to the block's used end), checking the header once it is whole.
    /// Returns whether the record is complete. Inlined: it runs once per record and block.
    #[inline]
    fn read_record_bytes(&mut self, index: u64, header: &BlockHeader) -> Result<bool, WalError> {
        let block_start = index * BLOCK as u64;
        let used_end = block_start + header.used as u64;
        if self.partial.is_empty() {
            self.partial_lsn = self.pos;
            self.partial_format = header.format;
            self.partial_spans = false;
        }
        let (format, header_bytes) = (self.partial_format, self.partial_format.header_bytes());
        let have = self.partial.len();
        let need = if have < header_bytes {
            header_bytes - have
        } else {
            let len = format::decode_record_header(format, &self.partial[..header_bytes]).len;
            header_bytes + len as usize - have
        };
        let n = (need as u64).min(used_end - self.pos) as usize;
        self.load(index)?;
        let at =
            ((index - self.chunk_first_block) * BLOCK as u64 + self.pos - block_start) as usize;
        self.partial.extend_from_slice(&self.chunk[at..at + n]);
        self.pos += n as u64;
        if self.partial.len() == header_bytes {
            let h = format::decode_record_header(format, &self.partial);
            if let Some(lsn) = h.lsn.filter(|lsn| *lsn != self.partial_lsn) {
                let reason = format!("record header claims lsn {lsn}");
                return Err(self.corrupt(self.partial_lsn, reason));
            }
            if h.len as usize > MAX_RECORD_PAYLOAD_BYTES {
                let reason = format!("record length {} exceeds any valid record", h.len);
                return Err(self.corrupt(self.partial_lsn, reason));
            }
        }
        Ok(self.partial.len() >= header_bytes && {
            let len = format::decode_record_header(format, &self.partial[..header_bytes]).len;
            self.partial.len() == header_bytes + len as usize
        })
    }

    /// A complete record in `partial`, ending in the block at `block_start`: a record that
    /// spans blocks must end where the block says its carried bytes end, and its checksum must
    /// hold. Hands the record out and starts the next one empty.
    #[inline]
    fn finish_record(
        &mut self,
        block_start: u64,
        header: &BlockHeader,
    ) -> Result<WalRecord, WalError> {
        let (format, header_bytes) = (self.partial_format, self.partial_format.header_bytes());
        if self.partial_spans
            && self.pos != block_start + (BLOCK_HEADER_BYTES + header.carry as usize) as u64
        {
            let reason =
                format!("record ends at {} but the block carries {} bytes", self.pos, header.carry);
            return Err(self.corrupt(self.partial_lsn, reason));
        }
        let (head, payload) = self.partial.split_at(header_bytes);
        if !format::record_checksum_ok(format, head, payload) {
            return Err(self.corrupt(self.partial_lsn, "record checksum mismatch".into()));
        }
        let h = format::decode_record_header(format, head);
        let record =
            WalRecord { lsn: Lsn(self.partial_lsn), kind: h.kind, payload: payload.to_vec() };
        self.partial.clear();
        self.partial_spans = false;
        self.report.records += 1;
        self.report.payload_bytes += record.payload.len() as u64;
        Ok(record)
    }

    /// Moves to the next block (or the first one), checking how it continues the log.
    fn enter_next_block(&mut self) -> Result<Enter, WalError> {
        let index = match self.block {
            None => self.pos / BLOCK as u64,
            Some((index, header)) => {
                self.check_leaving(&header)?;
                index + 1
            }
        };
        if index >= self.limit_block {
            // The log fills the whole area: nothing can follow.
            return self.end_at(index, 0);
        }
        let read = self.decode(index)?;
        let header = match read {
            BlockRead::Valid(h) if h.epoch > self.max_epoch => {
                let reason = format!(
                    "block epoch {} is newer than the header's {}",
                    h.epoch, self.max_epoch
                );
                return Err(self.corrupt(index * BLOCK as u64, reason));
            }
            BlockRead::Valid(h) if h.epoch >= self.last_epoch => h,
            BlockRead::Invalid(reason) => {
                return Err(self.corrupt(index * BLOCK as u64, format!("invalid block: {reason}")))
            }
            // Stale (older lap or older incarnation), never written, torn, or foreign.
            _ => {
                let torn = u64::from(matches!(read, BlockRead::Torn));
                return self.end_at(index, torn);
            }
        };
        let block_start = index * BLOCK as u64;
        if self.block.is_none() {
            self.check_start_in_block(block_start, &header)?;
        } else {
            self.pos = block_start + BLOCK_HEADER_BYTES as u64;
            self.continue_into_block(block_start, &header)?;
        }
        self.last_epoch = header.epoch;
        self.block = Some((index, header));
        Ok(Enter::Entered)
    }

    /// Leaving the current block (`header`) with a record unfinished: the record must run to
    /// the block's end, and a record that spans the block must fill it.
    #[inline]
    fn check_leaving(&self, header: &BlockHeader) -> Result<(), WalError> {
        if self.partial.is_empty() {
            return Ok(());
        }
        if (header.used as usize) < BLOCK {
            let reason = "record cut by the padding of a closed block".to_string();
            return Err(self.corrupt(self.partial_lsn, reason));
        }
        let data = (BLOCK - BLOCK_HEADER_BYTES) as u16;
        if self.partial_spans && header.carry != data {
            let reason = format!(
                "record continues past a block that carries only {} bytes of it",
                header.carry
            );
            return Err(self.corrupt(self.partial_lsn, reason));
        }
        Ok(())
    }

    /// The first block: reading starts mid-block at a record boundary, past the bytes the block
    /// carries over from the block before and not past its used bytes.
    #[inline]
    fn check_start_in_block(&self, block_start: u64, header: &BlockHeader) -> Result<(), WalError> {
        let offset = self.pos - block_start;
        if offset < (BLOCK_HEADER_BYTES + header.carry as usize) as u64
            || offset > header.used as u64
        {
            let reason = format!(
                "start is not a record boundary of its block (carry {}, used {})",
                header.carry, header.used
            );
            return Err(self.corrupt(self.pos, reason));
        }
        Ok(())
    }

    /// A later block: its carry must match whether a record is unfinished. A record cut by a
    /// crash before a later incarnation's block is dropped; any other mismatch is corruption.
    #[inline]
    fn continue_into_block(
        &mut self,
        block_start: u64,
        header: &BlockHeader,
    ) -> Result<(), WalError> {
        if self.partial.is_empty() {
            if header.carry != 0 {
                let reason =
                    format!("block carries {} bytes of a record that never began", header.carry);
                return Err(self.corrupt(block_start, reason));
            }
            return Ok(());
        }
        if header.carry == 0 && header.epoch > self.last_epoch {
            // A record cut by a crash, after which a later incarnation resumed at this
            // block: the record was never acknowledged. Drop it and go on.
            self.report.partial_records_dropped += 1;
            self.report.torn_tail_bytes += self.partial.len() as u64;
            self.partial.clear();
            self.partial_spans = false;
        } else if header.carry == 0 {
            let reason = "record continues into a block that carries none of it".to_string();
            return Err(self.corrupt(self.partial_lsn, reason));
        } else if header.format != self.partial_format {
            // One incarnation writes one format, and a record never leaves its own.
            let reason = "record continues into a block of another format".to_string();
            return Err(self.corrupt(self.partial_lsn, reason));
        } else {
            self.partial_spans = true;
        }
        Ok(())
    }

    /// Block `index` does not continue the log. Decides between end of log and corruption by
    /// looking ahead for a later valid block written after the log was synced past `index`.
    fn end_at(&mut self, index: u64, torn_blocks: u64) -> Result<Enter, WalError> {
        let bad_lsn = index * BLOCK as u64;
        let end = (index + self.lookahead_blocks).min(self.limit_block);
        let mut tail_end = index + torn_blocks;
        for later in index + 1..end {
            if let BlockRead::Valid(h) = self.decode(later)? {
                if h.epoch < self.last_epoch || h.epoch > self.max_epoch {
                    continue;
                }
                if h.synced_lsn > bad_lsn {
                    let reason = format!(
                        "block at lsn {bad_lsn} is damaged or missing, but the block at lsn {} \
                         (epoch {}) was written after the log was synced up to {}",
                        h.block_lsn, h.epoch, h.synced_lsn
                    );
                    return Err(self.corrupt(bad_lsn, reason));
                }
                // A straggler of the last, unsynced flush.
                tail_end = later + 1;
            }
        }
        if self.block.is_none()
            && self.pos == self.start_lsn
            && self.pos != bad_lsn + BLOCK_HEADER_BYTES as u64
        {
            // The log starts mid-block: records precede the start in that block, so it was
            // written and synced (truncation moves the start only to a durable record). Ending
            // here would resume before the start.
            let reason = "the block holding the log start is damaged or missing".to_string();
            return Err(self.corrupt(self.pos, reason));
        }
        if self.block.is_none() && self.pos > self.start_lsn {
            // Recovery was asked to start past the log start, at a position the log must reach
            // (a checkpoint's LSN): it has to lie at the start of the first unwritten block, right
            // after a valid block.
            let reaches = self.pos == bad_lsn + BLOCK_HEADER_BYTES as u64
                && index > self.start_lsn / BLOCK as u64
                && matches!(self.decode(index - 1)?, BlockRead::Valid(h) if h.epoch <= self.max_epoch);
            if !reaches {
                let reason = "the log ends before the requested start".to_string();
                return Err(self.corrupt(self.pos, reason));
            }
        }
        self.report.torn_tail_bytes +=
            (tail_end - index) * BLOCK as u64 + self.partial.len() as u64;
        if !self.partial.is_empty() {
            self.report.partial_records_dropped += 1;
            self.partial.clear();
        }
        self.report.end_lsn = Lsn(bad_lsn + BLOCK_HEADER_BYTES as u64);
        self.block = None;
        Ok(Enter::End)
    }
}
