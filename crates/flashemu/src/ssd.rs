//! The device facade: checks every command, then hands it to the FTL (conventional,
//! multi-stream, FDP) or to the zone manager (ZNS), and keeps the data store by LBA.
//!
//! A refused command (any `Err` other than `Store`) changes nothing: all checks run before the
//! first mutation. Store I/O runs before the metadata update, so a failed store write leaves the
//! mappings as they were (the store range may hold part of the new bytes).
mod compressed;

use crate::cczns::Engine;
use crate::config::{Config, Interface};
use crate::ftl::plan::PlanFtl;
use crate::ftl::Ftl;
use crate::layout::Layout;
use crate::store::Store;
use crate::timing::{Timing, TimingReport};
use crate::zns::Zns;
use crate::{Counters, EmuError, FdpReport, FdpStats, Placement, ZoneInfo, LBA_BYTES};

#[derive(Debug)]
enum Backend {
    Ftl(Box<Ftl>),
    Zns(Box<Zns>),
    /// 004's PLAN and its baselines (`config.plan`).
    Plan(Box<PlanFtl>),
}

/// One emulated SSD. Single-threaded (`&mut self`); wrap in a Mutex to share.
///
/// `flush()` keeps partly filled flash pages in the device's write buffer (modelled as power-loss
/// protected, like an enterprise SSD's): they are programmed, and counted, when they fill. So
/// `flash_pad_bytes` stays 0 on conventional/FDP devices; ZNS pads only on zone finish (or a zone
/// whose capacity is not a whole number of flash pages filling up).
#[derive(Debug)]
pub struct Ssd {
    config: Config,
    layout: Layout,
    counters: Counters,
    store: Store,
    backend: Backend,
    /// Device time; None (the default) keeps every command on the untimed path.
    timing: Option<Box<Timing>>,
    /// 002's compression engine and chunk OOB, on a ZNS device with `[cczns]`.
    cczns: Option<Box<Engine>>,
}

impl Ssd {
    /// Builds the device after validating `config`. A file store is created empty (truncated).
    pub fn new(config: Config) -> Result<Ssd, EmuError> {
        config.validate()?;
        let layout = config.layout();
        let (backend, handles) = match (config.interface, &config.plan) {
            (Interface::Conventional { streams }, Some(plan)) => {
                (Backend::Plan(Box::new(PlanFtl::new(&config, plan, &layout)?)), streams)
            }
            (Interface::Conventional { streams }, None) => {
                (Backend::Ftl(Box::new(Ftl::new(&config, &layout))), streams)
            }
            (Interface::Fdp { ruh_count, .. }, _) => {
                (Backend::Ftl(Box::new(Ftl::new(&config, &layout))), ruh_count)
            }
            (Interface::Zns { .. }, _) => (Backend::Zns(Box::new(Zns::new(&config, &layout))), 1),
        };
        let store = Store::open(&config.store, layout.logical_blocks)?;
        let timing = Timing::new(&config, &layout);
        let counters = Counters::new(handles as usize);
        let page_bytes = u64::from(layout.flash_page_bytes);
        let cczns = match config.cczns {
            Some(cczns) => Some(Box::new(Engine::new(cczns, page_bytes)?)),
            None => None,
        };
        Ok(Ssd { config, layout, counters, store, backend, timing, cczns })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Derived sizes: superblocks, slots per superblock, logical capacity, GC reserve.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Logical capacity in 4 KiB blocks (for ZNS: zone_count * zone size).
    pub fn logical_blocks(&self) -> u64 {
        self.layout.logical_blocks
    }

    /// Physical capacity in bytes.
    pub fn physical_bytes(&self) -> u64 {
        self.layout.physical_slots * LBA_BYTES
    }

    fn check_range(&self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        let capacity_blocks = self.layout.logical_blocks;
        match lba.checked_add(blocks) {
            Some(end) if end <= capacity_blocks => Ok(()),
            _ => Err(EmuError::OutOfRange { lba, blocks, capacity_blocks }),
        }
    }

    /// The open-superblock handle a placement maps to. A device without streams ignores hints
    /// (as a drive ignores a directive it has not enabled); a configured kind is checked.
    fn handle_of(&self, placement: Placement) -> Result<usize, EmuError> {
        match (self.config.interface, placement) {
            (Interface::Conventional { streams }, Placement::Stream(id)) if streams > 1 => {
                if u32::from(id) < streams {
                    Ok(usize::from(id))
                } else {
                    Err(EmuError::BadPlacement(format!(
                        "stream {id} (device has {streams} streams)"
                    )))
                }
            }
            (Interface::Fdp { ruh_count, .. }, Placement::Fdp(id)) => {
                if u32::from(id) < ruh_count {
                    Ok(usize::from(id))
                } else {
                    Err(EmuError::BadPlacement(format!(
                        "placement id {id} (device has {ruh_count} RUHs)"
                    )))
                }
            }
            (Interface::Zns { .. }, Placement::Stream(_) | Placement::Fdp(_)) => Err(
                EmuError::BadPlacement(format!("{placement:?} on a ZNS device (zones place data)")),
            ),
            _ => Ok(0),
        }
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
        let count = u64::from(blocks);
        self.check_range(lba, count)?;
        if let Some(bytes) = data {
            if bytes.len() as u64 != count * LBA_BYTES {
                return Err(EmuError::BadBuffer { len: bytes.len() });
            }
        }
        let handle = self.handle_of(placement)?;
        if count == 0 {
            return Ok(());
        }
        match &mut self.backend {
            Backend::Ftl(ftl) => {
                self.store.write(lba, count, data)?;
                for offset in 0..count {
                    ftl.write(lba + offset, handle, &mut self.counters)?;
                }
                if let Some(timing) = &mut self.timing {
                    timing.write(lba, count, &|l| ftl.slot_of(l), &self.counters);
                }
            }
            Backend::Plan(plan) => {
                self.store.write(lba, count, data)?;
                let now_units =
                    plan_now_units(&self.config, self.timing.as_deref(), &self.counters);
                plan.write(lba, count, handle, now_units, &mut self.counters)?;
                if let Some(timing) = &mut self.timing {
                    let end = lba + count;
                    timing.write(
                        lba,
                        count,
                        &|l| plan.timing_write_slot_of(l, end),
                        &self.counters,
                    );
                }
                plan.after_command(&mut self.counters)?;
            }
            Backend::Zns(zns) => {
                let zone = zns.check_write(lba, count)?;
                self.store.write(lba, count, data)?;
                zns.apply_write(zone, count, &mut self.counters);
                if let Some(timing) = &mut self.timing {
                    timing.write(lba, count, &zns_slot, &self.counters);
                }
            }
        }
        self.counters.host_write_bytes += count * LBA_BYTES;
        self.counters.stream_host_bytes[handle] += count * LBA_BYTES;
        Ok(())
    }

    /// Writes one 4 KiB block, metadata only (as `write` with `data: None`), at each LBA of
    /// `lbas` in order: a queue of single-block writes submitted at once, as fio's `iodepth`
    /// does. Every LBA is checked before the first is written, so a refused batch changes
    /// nothing. Conventional and FDP devices only (a ZNS write must land at the pointer).
    ///
    /// Why a batch: a random write's cost is the cache miss on its `l2p` entry. Seeing the
    /// LBAs ahead, the FTL prefetches a few writes in advance and the misses overlap.
    pub fn write_scattered(&mut self, lbas: &[u64], placement: Placement) -> Result<(), EmuError> {
        for &lba in lbas {
            self.check_range(lba, 1)?;
        }
        let handle = self.handle_of(placement)?;
        if let Backend::Plan(_) = self.backend {
            return self.write_scattered_plan(lbas, placement);
        }
        let Backend::Ftl(ftl) = &mut self.backend else {
            return Err(EmuError::WrongInterface { needed: "conventional or FDP" });
        };
        // Ahead far enough to cover a miss's latency with the writes in between, and near
        // enough that the lines are still cached when their write comes.
        const PREFETCH_DISTANCE: usize = 8;
        for (index, &lba) in lbas.iter().enumerate() {
            if let Some(&ahead) = lbas.get(index + PREFETCH_DISTANCE) {
                ftl.prefetch(ahead);
            }
            self.store.write(lba, 1, None)?;
            ftl.write(lba, handle, &mut self.counters)?;
            self.counters.host_write_bytes += LBA_BYTES;
        }
        self.counters.stream_host_bytes[handle] += lbas.len() as u64 * LBA_BYTES;
        if let Some(timing) = &mut self.timing {
            // Each queued write is its own command; GC of the batch is charged to the first.
            for &lba in lbas {
                timing.write(lba, 1, &|l| ftl.slot_of(l), &self.counters);
            }
        }
        Ok(())
    }

    /// `write_scattered` on a PLAN device: one command per LBA, as the batch stands for (PLAN
    /// routes each by itself). Out of line so the conventional batch loop stays as it was.
    #[cold]
    #[inline(never)]
    fn write_scattered_plan(&mut self, lbas: &[u64], placement: Placement) -> Result<(), EmuError> {
        for &lba in lbas {
            self.write(lba, 1, None, placement)?;
        }
        Ok(())
    }

    /// Reads `buf.len() / 4096` blocks at `lba`: the bytes last written, zeros if never written
    /// or trimmed (or if the store is `None`).
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), EmuError> {
        if !(buf.len() as u64).is_multiple_of(LBA_BYTES) {
            return Err(EmuError::BadBuffer { len: buf.len() });
        }
        let count = buf.len() as u64 / LBA_BYTES;
        self.check_range(lba, count)?;
        if let Backend::Zns(zns) = &self.backend {
            zns.check_read(lba, count)?;
        }
        self.store.read(lba, buf)?;
        self.counters.host_read_bytes += count * LBA_BYTES;
        if let Some(timing) = &mut self.timing {
            match &self.backend {
                Backend::Ftl(ftl) => timing.read(lba, count, &|l| ftl.slot_of(l)),
                Backend::Zns(_) => timing.read(lba, count, &zns_slot),
                Backend::Plan(plan) => timing.read(lba, count, &|l| plan.timing_slot_of(l)),
            }
        }
        if let Backend::Plan(plan) = &mut self.backend {
            // 004's FEMU runs background GC after reads too.
            plan.after_command(&mut self.counters)?;
        }
        Ok(())
    }

    /// Deallocates the range. Conventional/FDP only.
    pub fn trim(&mut self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        if let Backend::Zns(_) = self.backend {
            return Err(EmuError::WrongInterface { needed: "conventional or FDP" });
        }
        let capacity_blocks = self.layout.logical_blocks;
        match lba.checked_add(blocks) {
            Some(end) if end <= capacity_blocks => {}
            _ => return Err(EmuError::OutOfRange { lba, blocks, capacity_blocks }),
        }
        self.store.zero(lba, blocks)?;
        let now_units = plan_now_units(&self.config, self.timing.as_deref(), &self.counters);
        match &mut self.backend {
            Backend::Ftl(ftl) => ftl.trim(lba, blocks),
            Backend::Plan(plan) => {
                plan.trim(lba, blocks, now_units);
                plan.after_command(&mut self.counters)?;
            }
            Backend::Zns(_) => {}
        }
        self.counters.host_trim_bytes += blocks * LBA_BYTES;
        Ok(())
    }

    /// Makes everything written durable in the store (fsync for the file store). Partly filled
    /// flash pages stay in the (power-loss protected) write buffer: nothing is padded. In device
    /// time a flush is a barrier: it completes when every command before it has (the last
    /// program among them included), and no later command starts earlier.
    pub fn flush(&mut self) -> Result<(), EmuError> {
        self.store.flush()?;
        if let Some(timing) = &mut self.timing {
            timing.flush();
        }
        Ok(())
    }

    fn zns(&self) -> Result<&Zns, EmuError> {
        match &self.backend {
            Backend::Zns(zns) => Ok(zns),
            Backend::Ftl(_) | Backend::Plan(_) => Err(EmuError::WrongInterface { needed: "ZNS" }),
        }
    }

    fn zns_mut(&mut self) -> Result<&mut Zns, EmuError> {
        match &mut self.backend {
            Backend::Zns(zns) => Ok(zns),
            Backend::Ftl(_) | Backend::Plan(_) => Err(EmuError::WrongInterface { needed: "ZNS" }),
        }
    }

    pub fn zone_count(&self) -> u32 {
        self.zns().map_or(0, Zns::zone_count)
    }

    /// Zone append: writes at the write pointer and returns the LBA assigned.
    pub fn zone_append(
        &mut self,
        zone: u32,
        blocks: u32,
        data: Option<&[u8]>,
    ) -> Result<u64, EmuError> {
        let count = u64::from(blocks);
        let zns = self.zns()?;
        zns.check_zone(zone)?;
        if let Some(bytes) = data {
            if bytes.len() as u64 != count * LBA_BYTES {
                return Err(EmuError::BadBuffer { len: bytes.len() });
            }
        }
        if count == 0 {
            return Err(EmuError::BadBuffer { len: 0 });
        }
        let lba = zns.append_lba(zone, count)?;
        self.store.write(lba, count, data)?;
        let counters = &mut self.counters;
        if let Backend::Zns(zns) = &mut self.backend {
            zns.apply_write(zone, count, counters);
        }
        self.counters.host_write_bytes += count * LBA_BYTES;
        self.counters.stream_host_bytes[0] += count * LBA_BYTES;
        if let Some(timing) = &mut self.timing {
            timing.write(lba, count, &zns_slot, &self.counters);
        }
        Ok(lba)
    }

    pub fn zone_open(&mut self, zone: u32) -> Result<(), EmuError> {
        self.zns_mut()?.open(zone, false)
    }

    pub fn zone_close(&mut self, zone: u32) -> Result<(), EmuError> {
        self.zns_mut()?.close(zone)
    }

    /// Moves the zone to Full; a buffered partial flash page is programmed with padding.
    pub fn zone_finish(&mut self, zone: u32) -> Result<(), EmuError> {
        let Backend::Zns(zns) = &mut self.backend else {
            return Err(EmuError::WrongInterface { needed: "ZNS" });
        };
        zns.finish(zone, &mut self.counters)
    }

    /// Erases the zone: state Empty, write pointer at the start, reads return zeros.
    pub fn zone_reset(&mut self, zone: u32) -> Result<(), EmuError> {
        let zns = self.zns()?;
        zns.check_zone(zone)?;
        let start = zns.zone_start(zone);
        let written = zns.report_one(zone).write_pointer_lba - start;
        self.store.zero(start, written)?;
        let Backend::Zns(zns) = &mut self.backend else {
            unreachable!("checked above");
        };
        zns.reset(zone, &mut self.counters)?;
        if let Some(engine) = &mut self.cczns {
            // The erase takes the pages' out-of-band areas with it.
            let page_bytes = u64::from(self.layout.flash_page_bytes);
            let zone_bytes = zns.zone_bytes();
            let first = u64::from(zone) * zone_bytes / page_bytes;
            engine.oob.erase(first, first + zone_bytes / page_bytes);
        }
        Ok(())
    }

    pub fn report_zones(&self) -> Result<Vec<ZoneInfo>, EmuError> {
        Ok(self.zns()?.report())
    }

    /// FDP reclaim unit handle update: each of `handles` starts a fresh reclaim unit with its
    /// next write (a host does this when it abandons what a handle was filling, e.g. after a
    /// restart closed its open zones). Refused unless FDP, and for a handle beyond the device's.
    pub fn fdp_update_handles(&mut self, handles: &[u16]) -> Result<(), EmuError> {
        let Interface::Fdp { ruh_count, .. } = self.config.interface else {
            return Err(EmuError::WrongInterface { needed: "FDP" });
        };
        if let Some(h) = handles.iter().find(|h| u32::from(**h) >= ruh_count) {
            return Err(EmuError::BadPlacement(format!("handle {h} of {ruh_count}")));
        }
        let Backend::Ftl(ftl) = &mut self.backend else {
            return Err(EmuError::WrongInterface { needed: "FDP" });
        };
        for &h in handles {
            ftl.update_handle(usize::from(h), &mut self.counters);
        }
        Ok(())
    }

    pub fn fdp_report(&self) -> Option<FdpReport> {
        match self.config.interface {
            Interface::Fdp { ruh_count, isolation } => Some(FdpReport {
                reclaim_unit_bytes: self.layout.superblock_bytes(),
                ruh_count,
                isolation,
            }),
            _ => None,
        }
    }

    pub fn fdp_stats(&self) -> Option<FdpStats> {
        match self.config.interface {
            Interface::Fdp { .. } => Some(FdpStats {
                host_bytes_written: self.counters.host_write_bytes,
                media_bytes_written: self.counters.flash_bytes(),
                media_bytes_erased: self.counters.superblock_erases
                    * self.layout.superblock_bytes(),
            }),
            _ => None,
        }
    }

    /// Device-time throughput and latencies, when the config turns timing on.
    pub fn timing_report(&self) -> Option<TimingReport> {
        self.timing.as_ref().map(|t| t.report())
    }

    /// Starts a new device-time window (throughput and latencies count from here), e.g. after
    /// a fill, to measure the steady state alone.
    pub fn restart_timing_window(&mut self) {
        if let Some(timing) = &mut self.timing {
            timing.restart_window();
        }
    }

    /// Snapshot of all counters. Cheap: call it every sample.
    pub fn counters(&self) -> Counters {
        self.counters.clone()
    }

    /// Erase count of every physical block (wear), indexed by physical block number
    /// `(channel * chips_per_channel + chip) * blocks_per_chip + block`.
    pub fn block_erase_counts(&self) -> Vec<u32> {
        let g = &self.config.geometry;
        let blocks =
            g.channels as usize * g.chips_per_channel as usize * g.blocks_per_chip as usize;
        let mut counts = vec![0u32; blocks];
        let per_superblock = match &self.backend {
            Backend::Ftl(ftl) => ftl.erase_counts(),
            Backend::Zns(zns) => zns.erase_counts(),
            // PLAN keeps erase counts per block, in this very numbering.
            Backend::Plan(plan) => return plan.block_erase_counts().to_vec(),
        };
        for (superblock, &erases) in per_superblock.iter().enumerate() {
            self.layout
                .for_each_block(&self.config, superblock as u32, |block| counts[block] = erases);
        }
        counts
    }

    /// Verifies the FTL's maps against each other (O(device size)); for tests.
    pub fn check_consistency(&self) -> Result<(), String> {
        match &self.backend {
            Backend::Ftl(ftl) => ftl.check(),
            Backend::Plan(plan) => plan.check(),
            Backend::Zns(_) => Ok(()),
        }
    }
}

/// PLAN's predictor clock: device time when the timing model runs, else 4 KiB host writes so
/// far; in `plan.time_unit`s. 0 without PLAN (never asked then).
fn plan_now_units(config: &Config, timing: Option<&Timing>, counters: &Counters) -> u64 {
    let Some(plan) = &config.plan else {
        return 0;
    };
    let ticks = match timing {
        Some(timing) => timing.clock_ns(),
        None => counters.host_write_bytes / LBA_BYTES,
    };
    ticks / plan.time_unit.max(1)
}

/// ZNS zones are laid onto superblocks in address order: an LBA is its own physical slot.
fn zns_slot(lba: u64) -> Option<u32> {
    u32::try_from(lba).ok()
}
