//! The layer the CCZNS experiment measures: a log-structured record writer on the emulated
//! zoned device, not the Wafer engine (whose native ZNS backend does not exist yet).
//!
//! Records (24-byte key, Table III value) are packed in arrival order into data blocks that
//! close at 4 KiB (a record never splits; one bigger than 4 KiB is a block of its own), as
//! RocksDB's SST data blocks in 002. Blocks stream into "files" of `FILE_RAW_BYTES`; each
//! scheme writes the same block stream:
//! - none / lz4 / zstd: the host compresses each block (lz4_flex block format, ZSTD level 1;
//!   a block that does not shrink is kept raw), packs the results byte after byte into a
//!   write buffer and writes whole 4 KiB LBAs with plain zone writes once it holds
//!   `WRITE_BUFFER_BYTES`; a file's last block is padded to 4 KiB.
//! - device: the host sends the raw blocks of each `WRITE_BUFFER_BYTES` with one multi-chunk
//!   compressed write into a padding zone (002 sec. IV-B), so each CW's last chunk is padded.
//!
//! A read finds the key's block through an in-memory index and reads it (plain read + host
//! decompression, or a decompressed read); a block still in the host's buffer is read there.
//! Every record read is checked against the bytes written. No compaction, no GC, no cache.
use flashemu::{EmuError, Placement, Ssd, LBA_BYTES};

use super::cpu::CpuClock;
use super::records::{key_bytes, TextValues};

/// Data block target size (RocksDB's default, 002 sec. V-C).
pub const BLOCK_BYTES: usize = 4096;
/// Host write buffer and multi-chunk CW size (RocksDB's 1 MiB write buffer, 002 sec. IV-B).
pub const WRITE_BUFFER_BYTES: usize = 1 << 20;
/// Raw bytes per file (RocksDB's 64 MiB target file size).
pub const FILE_RAW_BYTES: u64 = 64 << 20;
const RECORD_HEADER_BYTES: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    None,
    Lz4,
    Zstd,
    Device,
}

pub const SCHEMES: [Scheme; 4] = [Scheme::None, Scheme::Lz4, Scheme::Zstd, Scheme::Device];

impl Scheme {
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::None => "none",
            Scheme::Lz4 => "lz4",
            Scheme::Zstd => "zstd",
            Scheme::Device => "device",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Emulator(#[from] EmuError),
    #[error("codec: {0}")]
    Codec(String),
    #[error("read of key {key} returned other bytes than were written")]
    Mismatch { key: u64 },
    #[error("the device is full: {0} zones written")]
    DeviceFull(u32),
}

/// Where a data block lives.
#[derive(Debug, Clone, Copy)]
enum Block {
    /// Still in the host's open block or write buffer.
    Pending,
    /// Host scheme: `stored` bytes at byte address `at`; compressed unless stored == raw.
    Host { at: u64, stored: u32, raw: u32 },
    /// Device scheme: the chunk at `at` whose CW reported `feedback` bytes.
    Device { at: u64, feedback: u32, raw: u32 },
}

/// A key's latest record: its block and place in it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    block: u32,
    offset: u32,
    version: u32,
    value_bytes: u32,
}

pub struct Driver {
    scheme: Scheme,
    ssd: Ssd,
    zone_bytes: u64,
    zones: u32,
    text: TextValues,
    pub cpu: CpuClock,
    blocks: Vec<Block>,
    /// Bytes of each pending block, by block id (raw), until it reaches the device.
    pending: std::collections::BTreeMap<u32, Vec<u8>>,
    open: Vec<u8>,
    /// Host schemes: stored bytes not yet written, starting at block-aligned `out_at`.
    out: Vec<u8>,
    out_at: u64,
    /// Device scheme: ids of the raw blocks waiting for the next CW, and their bytes.
    cw_ids: Vec<u32>,
    cw_raw_bytes: usize,
    /// Device scheme: the zone CWs go to.
    zone: u32,
    file_raw_bytes: u64,
    index: Vec<Option<Slot>>,
    zstd: zstd::bulk::Compressor<'static>,
    unzstd: zstd::bulk::Decompressor<'static>,
    value: Vec<u8>,
    pub verified_reads: u64,
    pub raw_block_bytes: u64,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("scheme", &self.scheme)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

impl Driver {
    pub fn new(
        scheme: Scheme,
        ssd: Ssd,
        keys: u64,
        text: TextValues,
    ) -> Result<Driver, DriverError> {
        let zones = ssd.zone_count();
        let info = ssd.report_zones()?;
        let zone_bytes = info[0].size_blocks * LBA_BYTES;
        assert_eq!(info[0].capacity_blocks, info[0].size_blocks, "zones without gaps");
        let codec = |e: std::io::Error| DriverError::Codec(e.to_string());
        Ok(Driver {
            scheme,
            ssd,
            zone_bytes,
            zones,
            text,
            cpu: CpuClock::start(),
            blocks: Vec::new(),
            pending: std::collections::BTreeMap::new(),
            open: Vec::with_capacity(2 * BLOCK_BYTES),
            out: Vec::with_capacity(2 * WRITE_BUFFER_BYTES),
            out_at: 0,
            cw_ids: Vec::new(),
            cw_raw_bytes: 0,
            zone: 0,
            file_raw_bytes: 0,
            index: vec![None; keys as usize],
            zstd: zstd::bulk::Compressor::new(1).map_err(codec)?,
            unzstd: zstd::bulk::Decompressor::new().map_err(codec)?,
            value: Vec::new(),
            verified_reads: 0,
            raw_block_bytes: 0,
        })
    }

    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    /// Device time counts from here (a new phase).
    pub fn restart_timing_window(&mut self) {
        self.ssd.restart_timing_window();
    }

    /// Inserts or updates `key` with a value of `len` bytes.
    pub fn put(&mut self, key: u64, len: u32) -> Result<(), DriverError> {
        let version = self.index[key as usize].map_or(0, |s| s.version + 1);
        let mut value = std::mem::take(&mut self.value);
        self.text.value(key, version, len, &mut value);
        let record_bytes = RECORD_HEADER_BYTES + 24 + value.len();
        if !self.open.is_empty() && self.open.len() + record_bytes > BLOCK_BYTES {
            self.seal_block()?;
            if self.file_raw_bytes >= FILE_RAW_BYTES {
                self.end_file()?;
            }
        }
        let slot = Slot {
            block: self.blocks.len() as u32,
            offset: self.open.len() as u32,
            version,
            value_bytes: len,
        };
        self.open.extend_from_slice(&24u16.to_le_bytes());
        self.open.extend_from_slice(&len.to_le_bytes());
        self.open.extend_from_slice(&key_bytes(key));
        self.open.extend_from_slice(&value);
        self.value = value;
        self.index[key as usize] = Some(slot);
        Ok(())
    }

    /// Closes the open block and hands it to the scheme's write path.
    fn seal_block(&mut self) -> Result<(), DriverError> {
        let raw = std::mem::replace(&mut self.open, Vec::with_capacity(2 * BLOCK_BYTES));
        let id = self.blocks.len() as u32;
        self.raw_block_bytes += raw.len() as u64;
        self.file_raw_bytes += raw.len() as u64;
        if self.scheme == Scheme::Device {
            self.blocks.push(Block::Pending);
            self.cw_raw_bytes += raw.len();
            self.cw_ids.push(id);
            self.pending.insert(id, raw);
            if self.cw_raw_bytes >= WRITE_BUFFER_BYTES {
                self.send_cw()?;
            }
        } else {
            let stored = self.compress(&raw)?;
            let at = self.out_at + self.out.len() as u64;
            self.blocks.push(Block::Host {
                at,
                stored: stored.len() as u32,
                raw: raw.len() as u32,
            });
            self.out.extend_from_slice(&stored);
            if self.out.len() >= WRITE_BUFFER_BYTES {
                self.flush_out(false)?;
            }
        }
        Ok(())
    }

    /// Host compression of one block (kept raw when it does not shrink).
    fn compress(&mut self, raw: &[u8]) -> Result<Vec<u8>, DriverError> {
        let zstd = &mut self.zstd;
        let stored = match self.scheme {
            Scheme::Lz4 => self.cpu.codec(|| lz4_flex::block::compress(raw)),
            Scheme::Zstd => self
                .cpu
                .codec(|| zstd.compress(raw))
                .map_err(|e| DriverError::Codec(e.to_string()))?,
            Scheme::None | Scheme::Device => return Ok(raw.to_vec()),
        };
        Ok(if stored.len() < raw.len() { stored } else { raw.to_vec() })
    }

    /// Writes the whole LBAs of the host buffer (all of it, padded, at a file's end).
    fn flush_out(&mut self, pad: bool) -> Result<(), DriverError> {
        if pad {
            let padded = self.out.len().next_multiple_of(LBA_BYTES as usize);
            self.out.resize(padded, 0);
        }
        let whole = self.out.len() / LBA_BYTES as usize * LBA_BYTES as usize;
        let mut done = 0usize;
        // Bound: one write per zone the flush touches.
        for _ in 0..=self.zones {
            if done == whole {
                break;
            }
            let at = self.out_at + done as u64;
            let zone_left = self.zone_bytes - at % self.zone_bytes;
            if at / self.zone_bytes >= u64::from(self.zones) {
                return Err(DriverError::DeviceFull(self.zones));
            }
            let len = (whole - done).min(zone_left as usize);
            let blocks = (len as u64 / LBA_BYTES) as u32;
            let data = &self.out[done..done + len];
            let ssd = &mut self.ssd;
            self.cpu.device(|| ssd.write(at / LBA_BYTES, blocks, Some(data), Placement::None))?;
            done += len;
        }
        self.out.drain(..done);
        self.out_at += done as u64;
        Ok(())
    }

    /// Sends the waiting raw blocks as one multi-chunk CW, continuing in the next zone when
    /// the current one fills.
    fn send_cw(&mut self) -> Result<(), DriverError> {
        let ids = std::mem::take(&mut self.cw_ids);
        self.cw_raw_bytes = 0;
        let mut next = 0usize;
        // Bound: one CW per zone the chunks reach.
        for _ in 0..=self.zones {
            if next == ids.len() {
                return Ok(());
            }
            if self.zone >= self.zones {
                return Err(DriverError::DeviceFull(self.zones));
            }
            let info = self.ssd.report_zones()?[self.zone as usize];
            if info.write_pointer_bytes == (u64::from(self.zone) + 1) * self.zone_bytes {
                self.zone += 1;
                continue;
            }
            if info.write_pointer_bytes == u64::from(self.zone) * self.zone_bytes {
                let (ssd, zone) = (&mut self.ssd, self.zone);
                self.cpu.device(|| ssd.zone_open_padding(zone))?;
            }
            let chunks: Vec<&[u8]> =
                ids[next..].iter().map(|id| self.pending[id].as_slice()).collect();
            let ssd = &mut self.ssd;
            let out =
                self.cpu.device(|| ssd.compressed_write(info.write_pointer_bytes, &chunks))?;
            for (id, chunk) in ids[next..].iter().zip(&out.chunks) {
                self.blocks[*id as usize] = Block::Device {
                    at: chunk.byte_address,
                    feedback: chunk.feedback_bytes,
                    raw: chunk.raw_bytes,
                };
                self.pending.remove(id);
            }
            next += out.chunks.len();
        }
        Err(DriverError::DeviceFull(self.zones))
    }

    /// Ends a file: everything written, its last block padded (host) or aligned (device CW).
    pub fn end_file(&mut self) -> Result<(), DriverError> {
        if !self.open.is_empty() {
            self.seal_block()?;
        }
        self.file_raw_bytes = 0;
        if self.scheme == Scheme::Device {
            self.send_cw()
        } else {
            self.flush_out(true)
        }
    }

    /// Reads `key`'s latest record and checks it against the bytes written.
    pub fn get(&mut self, key: u64) -> Result<(), DriverError> {
        let Some(slot) = self.index[key as usize] else { return Ok(()) };
        let block = self.block_bytes(slot.block)?;
        let at = slot.offset as usize + RECORD_HEADER_BYTES + 24;
        let stored_value = block.get(at..at + slot.value_bytes as usize);
        let mut expected = std::mem::take(&mut self.value);
        self.cpu.check(|| self.text.value(key, slot.version, slot.value_bytes, &mut expected));
        let same = stored_value == Some(expected.as_slice());
        self.value = expected;
        if !same {
            return Err(DriverError::Mismatch { key });
        }
        self.verified_reads += 1;
        Ok(())
    }

    /// The raw bytes of a block, from the host's memory or the device.
    fn block_bytes(&mut self, id: u32) -> Result<Vec<u8>, DriverError> {
        if id as usize == self.blocks.len() {
            return Ok(self.open.clone());
        }
        match self.blocks[id as usize] {
            Block::Pending => Ok(self.pending[&id].clone()),
            Block::Device { at, feedback, raw } => {
                let mut buf = vec![0u8; raw as usize];
                let ssd = &mut self.ssd;
                let n = self.cpu.device(|| ssd.decompressed_read(at, feedback, &mut buf))?;
                buf.truncate(n);
                Ok(buf)
            }
            Block::Host { at, stored, raw } => {
                let bytes = self.stored_bytes(at, stored as usize)?;
                self.decompress(&bytes, raw as usize)
            }
        }
    }

    /// `len` stored bytes from byte `at`: the part on the device by a plain read of its LBAs,
    /// the part still in the write buffer from there.
    fn stored_bytes(&mut self, at: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let end = at + len as u64;
        let mut bytes = Vec::with_capacity(len);
        if at < self.out_at {
            let first = at / LBA_BYTES;
            let last = end.min(self.out_at).div_ceil(LBA_BYTES);
            let mut buf = vec![0u8; ((last - first) * LBA_BYTES) as usize];
            let ssd = &mut self.ssd;
            self.cpu.device(|| ssd.read(first, &mut buf))?;
            let from = (at - first * LBA_BYTES) as usize;
            let on_device = (end.min(self.out_at) - at) as usize;
            bytes.extend_from_slice(&buf[from..from + on_device]);
        }
        if end > self.out_at {
            let from = at.max(self.out_at) - self.out_at;
            bytes.extend_from_slice(&self.out[from as usize..(end - self.out_at) as usize]);
        }
        Ok(bytes)
    }

    fn decompress(&mut self, stored: &[u8], raw: usize) -> Result<Vec<u8>, DriverError> {
        if stored.len() == raw {
            return Ok(stored.to_vec());
        }
        let scheme = self.scheme;
        let unzstd = &mut self.unzstd;
        self.cpu.codec(|| match scheme {
            Scheme::Lz4 => lz4_flex::block::decompress(stored, raw)
                .map_err(|e| DriverError::Codec(e.to_string())),
            Scheme::Zstd => {
                unzstd.decompress(stored, raw).map_err(|e| DriverError::Codec(e.to_string()))
            }
            Scheme::None | Scheme::Device => {
                Err(DriverError::Codec("a compressed block without a codec".into()))
            }
        })
    }
}
