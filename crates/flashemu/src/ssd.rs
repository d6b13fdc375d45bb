//! The device facade. CONTRACT SKELETON: the emulator helper replaces the bodies; the signatures
//! are what the engine backend and the job runner code against.
#![allow(unused_variables, clippy::missing_errors_doc)]
use crate::{Config, Counters, EmuError, FdpReport, FdpStats, Placement, ZoneInfo};

/// One emulated SSD. Single-threaded (`&mut self`); wrap in a Mutex to share.
#[derive(Debug)]
pub struct Ssd {
    config: Config,
}

impl Ssd {
    /// Builds the device after validating `config`.
    pub fn new(config: Config) -> Result<Ssd, EmuError> {
        config.validate()?;
        Ok(Ssd { config })
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// Logical capacity in 4 KiB blocks (for ZNS: zone_count * zone size).
    pub fn logical_blocks(&self) -> u64 {
        todo!()
    }
    /// Physical capacity in bytes.
    pub fn physical_bytes(&self) -> u64 {
        todo!()
    }
    /// Writes `blocks` LBAs starting at `lba`. `data` is `blocks * 4096` bytes, or None for a
    /// metadata-only write (the store keeps zeros / nothing). On ZNS the write must be at the
    /// zone's write pointer.
    pub fn write(
        &mut self,
        lba: u64,
        blocks: u32,
        data: Option<&[u8]>,
        placement: Placement,
    ) -> Result<(), EmuError> {
        todo!()
    }
    /// Reads `buf.len() / 4096` blocks at `lba`: the bytes last written, zeros if never written
    /// or trimmed (or if the store is `None`).
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), EmuError> {
        todo!()
    }
    /// Deallocates the range. Conventional/FDP only.
    pub fn trim(&mut self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        todo!()
    }
    /// Makes everything written durable in the store (fsync for the file store).
    pub fn flush(&mut self) -> Result<(), EmuError> {
        todo!()
    }
    pub fn zone_count(&self) -> u32 {
        todo!()
    }
    /// Zone append: writes at the write pointer and returns the LBA assigned.
    pub fn zone_append(
        &mut self,
        zone: u32,
        blocks: u32,
        data: Option<&[u8]>,
    ) -> Result<u64, EmuError> {
        todo!()
    }
    pub fn zone_open(&mut self, zone: u32) -> Result<(), EmuError> {
        todo!()
    }
    pub fn zone_close(&mut self, zone: u32) -> Result<(), EmuError> {
        todo!()
    }
    pub fn zone_finish(&mut self, zone: u32) -> Result<(), EmuError> {
        todo!()
    }
    /// Erases the zone: state Empty, write pointer at the start, reads return zeros.
    pub fn zone_reset(&mut self, zone: u32) -> Result<(), EmuError> {
        todo!()
    }
    pub fn report_zones(&self) -> Result<Vec<ZoneInfo>, EmuError> {
        todo!()
    }
    pub fn fdp_report(&self) -> Option<FdpReport> {
        todo!()
    }
    pub fn fdp_stats(&self) -> Option<FdpStats> {
        todo!()
    }
    /// Snapshot of all counters. Cheap: call it every sample.
    pub fn counters(&self) -> Counters {
        todo!()
    }
    /// Erase count of every physical block (wear), indexed by physical block number.
    pub fn block_erase_counts(&self) -> Vec<u32> {
        todo!()
    }
}
