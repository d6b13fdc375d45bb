//! 004's PLAN in the conventional FTL: superblocks of two widths, request-size routing, an
//! in-SSD lifetime predictor, and 004's baselines on the same machinery (`PlanScheme`).
//!
//! Unlike the conventional FTL, whose superblocks are fixed sets of blocks, this FTL keeps the
//! flash as blocks and forms a superblock when it opens one: a big superblock takes a free
//! block from every chip, a small one from `small_chips_per_channel` chips of every channel.
//! Pages are striped over a superblock's blocks, channel fastest, as the conventional FTL's
//! timing model assumes. A superblock ("group" below) is erased whole by GC (victim: lowest
//! valid ratio, so small and big superblocks compete fairly), except under partial GC, whose
//! victims are single blocks and whose groups dissolve as their blocks are erased.
//!
//! A "slot" below is the map's unit (`plan.map_unit`): a 4 KiB LBA, or a whole flash page as
//! 004's FEMU maps, when a write programs every page it touches whole. Physical slot `s` is in
//! block `s / slots_per_block`; block `b` is on chip `b / blocks_per_chip`, chip-major as
//! `Ssd::block_erase_counts` numbers them.
use std::collections::VecDeque;

use super::buckets::ValidBuckets;
use super::valid_bits::ValidBits;
use super::{SuperblockState, UNMAPPED};
use crate::config::{Config, PlanConfig, PlanGcTrigger, PlanMapUnit, PlanScheme};
use crate::layout::Layout;
use crate::{Counters, EmuError};

mod autostream;
mod gc;
mod predictor;
mod trigger;

use autostream::AutoStream;
use predictor::LifetimePredictor;

pub(crate) const NONE: u32 = u32::MAX;

/// Where host (or GC) data is being appended: a group and the next slot offset in it.
#[derive(Debug, Clone, Copy)]
struct OpenPoint {
    group: u32,
    next_offset: u32,
    /// Chips per channel of the groups this point opens.
    chips_per_channel: u32,
}

/// Flash blocks kept aside: the GC reserve plus every open superblock at its width.
pub(crate) fn reserved_blocks(config: &Config, plan: &PlanConfig, layout: &Layout) -> u64 {
    let g = &config.geometry;
    let big = u64::from(g.channels) * u64::from(plan.big_chips(g.chips_per_channel));
    let small = u64::from(g.channels) * u64::from(plan.small_chips_per_channel);
    let (big_points, small_points) = host_points(config, plan);
    // + 1: GC's own open superblock, always big (004: "an extra superblock with full
    // parallelism for GC").
    let open = (u64::from(big_points) + 1) * big + u64::from(small_points) * small;
    match plan.gc_trigger {
        // gc_free_target + 1: see gc.rs on why PLAN reserves one big width more.
        PlanGcTrigger::OnDemand => (u64::from(layout.gc_free_target) + 1) * big + open,
        // The chips' floors are targets, not reservations (FEMU lets a full device sink
        // below them); what must stay free is GC's next destination and one more big width
        // for the last victim's copies before its erases return blocks (see gc.rs).
        PlanGcTrigger::PerChip => 2 * big + open,
    }
}

/// Per-chip trigger thresholds in blocks: FEMU truncates `fraction x blocks per chip`.
fn foreground_free_blocks(plan: &PlanConfig, blocks_per_chip: u32) -> usize {
    (plan.gc_foreground_free * f64::from(blocks_per_chip)) as usize
}

fn background_free_blocks(plan: &PlanConfig, blocks_per_chip: u32) -> usize {
    (plan.gc_background_free * f64::from(blocks_per_chip)) as usize
}

/// Open host superblocks (big, small) a scheme keeps: those it writes, or with
/// `plan.device_streams` at least FEMU's per-stream set (see `PlanConfig::device_streams`).
fn host_points(config: &Config, plan: &PlanConfig) -> (u32, u32) {
    let streams = match config.interface {
        crate::Interface::Conventional { streams } => streams,
        _ => 1,
    };
    let used = match plan.scheme {
        PlanScheme::Plain | PlanScheme::PartialGc => (1, 0),
        PlanScheme::MultiStream => (streams, 0),
        PlanScheme::AutoStream => (plan.autostream_streams, 0),
        PlanScheme::PlanNoPred => (1, 1),
        PlanScheme::PlanPred | PlanScheme::PlanOracle => {
            (1 + plan.lifetime_classes, 1 + plan.lifetime_classes)
        }
    };
    if plan.device_streams == 0 {
        return used;
    }
    // FEMU: stream 0 (default) and one per stream; with two widths, even streams small and
    // odd ones big, so half of `device_streams + 2` each.
    let femu = if plan.scheme.flexible() {
        (plan.device_streams / 2 + 1, plan.device_streams / 2 + 1)
    } else {
        (plan.device_streams + 1, 0)
    };
    (used.0.max(femu.0), used.1.max(femu.1))
}

/// The open points, none formed yet: host points big then small (see `point_of`), GC's last.
fn open_points(config: &Config, plan: &PlanConfig) -> Vec<OpenPoint> {
    let big_chips = plan.big_chips(config.geometry.chips_per_channel);
    let point =
        |chips_per_channel| OpenPoint { group: NONE, next_offset: u32::MAX, chips_per_channel };
    let (big_points, small_points) = host_points(config, plan);
    let mut open = Vec::with_capacity((big_points + small_points + 1) as usize);
    open.extend((0..big_points).map(|_| point(big_chips)));
    open.extend((0..small_points).map(|_| point(plan.small_chips_per_channel)));
    open.push(point(big_chips));
    open
}

/// The sealed-group bucket sets by width and chip group (big, small), and under partial GC the
/// sealed-block sets, one per chip (see `PlanFtl::big_buckets`).
type BucketSets = (Vec<ValidBuckets>, Vec<ValidBuckets>, Option<Vec<ValidBuckets>>);

fn bucket_sets(
    plan: &PlanConfig,
    geometry: &crate::Geometry,
    slots_per_block: u32,
    groups: usize,
) -> BucketSets {
    let g = geometry;
    // One set per aligned chip group of a width, holding groups of that width's slots.
    let sets = |chips_per_group: u32| -> Vec<ValidBuckets> {
        let group_slots = g.channels * chips_per_group * slots_per_block;
        (0..g.chips_per_channel / chips_per_group)
            .map(|_| ValidBuckets::new(group_slots, groups as u32))
            .collect()
    };
    let chips = g.channels * g.chips_per_channel;
    let per_chip = (plan.scheme == PlanScheme::PartialGc).then(|| {
        (0..chips).map(|_| ValidBuckets::new(slots_per_block, g.blocks_per_chip)).collect()
    });
    (sets(plan.big_chips(g.chips_per_channel)), sets(plan.small_chips_per_channel), per_chip)
}

/// The map's unit against the 4 KiB LBA and the flash (`PlanConfig::map_unit`).
struct MapUnits {
    /// log2 of LBAs per slot.
    lba_shift: u32,
    slots_per_page: u32,
    slots_per_block: u32,
    physical_slots: u64,
    logical_slots: u64,
}

impl MapUnits {
    fn of(plan: &PlanConfig, pages_per_block: u32, layout: &Layout) -> MapUnits {
        let lbas_per_page = layout.slots_per_page;
        assert!(lbas_per_page.is_power_of_two());
        let lba_shift = match plan.map_unit {
            PlanMapUnit::Slot => 0,
            PlanMapUnit::Page => lbas_per_page.trailing_zeros(),
        };
        let slots_per_page = lbas_per_page >> lba_shift;
        let physical_slots = layout.physical_slots >> lba_shift;
        assert!(physical_slots < u64::from(UNMAPPED));
        MapUnits {
            lba_shift,
            slots_per_page,
            slots_per_block: pages_per_block * slots_per_page,
            physical_slots,
            logical_slots: layout.logical_blocks.div_ceil(1 << lba_shift),
        }
    }
}

#[derive(Debug)]
pub(crate) struct PlanFtl {
    plan: PlanConfig,
    channels: u32,
    chips_per_channel: u32,
    /// Chips per channel of a big superblock (and GC's).
    big_chips: u32,
    blocks_per_chip: u32,
    pages_per_block: u32,
    slots_per_block: u32,
    /// Slots (map units) per flash page - 1: 0 when the map unit is the page.
    page_mask: u32,
    /// 4 KiB LBAs per slot, as a shift: 0, or log2(LBAs per flash page) for `PlanMapUnit::Page`.
    lba_shift: u32,
    /// 4 KiB LBAs per flash page.
    lbas_per_page: u32,
    flash_page_bytes: u64,
    /// Slots per predictor chunk (a power of two) as a shift.
    chunk_shift: u32,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid_bits: ValidBits,
    block_valid: Vec<u32>,
    block_group: Vec<u32>,
    block_sealed_at: Vec<u64>,
    block_erases: Vec<u32>,
    free_by_chip: Vec<VecDeque<u32>>,
    free_blocks: u64,
    /// Groups: `group_blocks[g * big_blocks ..][.. group_width[g]]` are g's blocks.
    group_blocks: Vec<u32>,
    group_width: Vec<u32>,
    /// First chip (within each channel) of the chips the group was formed on.
    group_first_chip: Vec<u32>,
    group_valid: Vec<u32>,
    group_live_blocks: Vec<u32>,
    group_state: Vec<SuperblockState>,
    group_sealed_at: Vec<u64>,
    free_groups: Vec<u32>,
    /// Sealed groups by valid count: one set per width (big, small) and aligned chip group
    /// (index = first chip / chips per channel of the width), so the groups holding a block
    /// of a given chip are two sets. Under partial GC sealed blocks instead, one set per chip,
    /// indexed by the block's number within its chip.
    big_buckets: Vec<ValidBuckets>,
    small_buckets: Vec<ValidBuckets>,
    block_buckets: Option<Vec<ValidBuckets>>,
    /// Host points (layout per scheme, see `point_of`), then GC's point last.
    open: Vec<OpenPoint>,
    predictor: Option<LifetimePredictor>,
    autostream: Option<AutoStream>,
    gc_low_blocks: u64,
    gc_target_blocks: u64,
    /// Per-chip trigger thresholds in free blocks of a chip, and the chip its next scan
    /// starts at (FEMU scans chips round robin).
    background_free_blocks: usize,
    foreground_free_blocks: usize,
    next_gc_chip: usize,
    /// Round-robin chip group for the next superblock narrower than the device.
    next_chip_group: u32,
    /// Slots programmed (host + GC): seal order for victim ties.
    clock: u64,
}

impl PlanFtl {
    /// The FTL with every open superblock `plan.device_streams` asks for already formed.
    pub(crate) fn new(
        config: &Config,
        plan: &PlanConfig,
        layout: &Layout,
    ) -> Result<PlanFtl, EmuError> {
        let g = &config.geometry;
        let blocks = (g.channels * g.chips_per_channel * g.blocks_per_chip) as usize;
        let MapUnits { lba_shift, slots_per_page, slots_per_block, physical_slots, logical_slots } =
            MapUnits::of(plan, g.pages_per_block, layout);
        assert_eq!(blocks as u64 * u64::from(slots_per_block), physical_slots);
        let big_chips = plan.big_chips(g.chips_per_channel);
        let big_blocks = g.channels * big_chips;
        let small_blocks = g.channels * plan.small_chips_per_channel;
        let groups = (blocks as u32 / small_blocks.min(big_blocks)) as usize;
        let (big_buckets, small_buckets, block_buckets) =
            bucket_sets(plan, g, slots_per_block, groups);
        let chunk_slots = plan.chunk_pages * slots_per_page;
        let chunks = logical_slots.div_ceil(u64::from(chunk_slots)) as usize;
        let mut ftl = PlanFtl {
            plan: *plan,
            channels: g.channels,
            chips_per_channel: g.chips_per_channel,
            big_chips,
            blocks_per_chip: g.blocks_per_chip,
            pages_per_block: g.pages_per_block,
            slots_per_block,
            page_mask: slots_per_page - 1,
            lba_shift,
            lbas_per_page: layout.slots_per_page,
            flash_page_bytes: u64::from(layout.flash_page_bytes),
            chunk_shift: chunk_slots.trailing_zeros(),
            l2p: vec![UNMAPPED; logical_slots as usize],
            p2l: vec![UNMAPPED; physical_slots as usize],
            valid_bits: ValidBits::new(physical_slots),
            block_valid: vec![0; blocks],
            block_group: vec![NONE; blocks],
            block_sealed_at: vec![0; blocks],
            block_erases: vec![0; blocks],
            free_by_chip: (0..g.channels * g.chips_per_channel)
                .map(|chip| (chip * g.blocks_per_chip..(chip + 1) * g.blocks_per_chip).collect())
                .collect(),
            free_blocks: blocks as u64,
            group_blocks: vec![NONE; groups * big_blocks as usize],
            group_width: vec![0; groups],
            group_first_chip: vec![0; groups],
            group_valid: vec![0; groups],
            group_live_blocks: vec![0; groups],
            group_state: vec![SuperblockState::Free; groups],
            group_sealed_at: vec![0; groups],
            free_groups: (0..groups as u32).rev().collect(),
            big_buckets,
            small_buckets,
            block_buckets,
            open: open_points(config, plan),
            predictor: (plan.scheme == PlanScheme::PlanPred).then(|| {
                LifetimePredictor::new(chunks, plan.history_weight, plan.lifetime_classes)
            }),
            autostream: (plan.scheme == PlanScheme::AutoStream).then(|| {
                AutoStream::new(chunks, plan.autostream_streams, plan.autostream_decay_units)
            }),
            gc_low_blocks: (u64::from(config.gc.free_superblocks_low) + 1) * u64::from(big_blocks),
            gc_target_blocks: (u64::from(layout.gc_free_target) + 1) * u64::from(big_blocks),
            background_free_blocks: background_free_blocks(plan, g.blocks_per_chip),
            foreground_free_blocks: foreground_free_blocks(plan, g.blocks_per_chip),
            next_gc_chip: 0,
            next_chip_group: 0,
            clock: 0,
        };
        if plan.device_streams > 0 {
            ftl.form_every_point()?;
        }
        Ok(ftl)
    }

    /// FEMU forms every stream's line, GC's too, when the device starts.
    fn form_every_point(&mut self) -> Result<(), EmuError> {
        for point in 0..self.open.len() {
            let group = self.open_group(self.open[point].chips_per_channel)?;
            self.open[point].group = group;
            self.open[point].next_offset = 0;
        }
        Ok(())
    }

    pub(crate) fn block_erase_counts(&self) -> &[u32] {
        &self.block_erases
    }

    /// Writes `blocks` LBAs at `lba` from host handle `handle` at time `now_units`: routes the
    /// request (by size, stream or predicted lifetime), one decision per chunk it touches.
    pub(crate) fn write(
        &mut self,
        lba: u64,
        blocks: u64,
        handle: usize,
        now_units: u64,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        self.before_write(counters)?;
        if blocks == 0 {
            return Ok(());
        }
        let lpp = u64::from(self.lbas_per_page);
        let pages = (lba + blocks).div_ceil(lpp) - lba / lpp;
        let big = pages >= u64::from(self.plan.big_request_pages);
        // The slots the request touches: a partly written page is a whole slot in page mode.
        let end = ((lba + blocks - 1) >> self.lba_shift) + 1;
        let mut at = lba >> self.lba_shift;
        // Bound: one pass per chunk the request touches.
        while at < end {
            let chunk = at >> self.chunk_shift;
            let chunk_end = ((chunk + 1) << self.chunk_shift).min(end);
            let point = self.point_of(chunk as usize, at, chunk_end - at, big, handle, now_units);
            assert!(point < self.open.len() - 1, "host point {point} is GC's");
            for each in at..chunk_end {
                self.write_slot(each, point, counters)?;
            }
            at = chunk_end;
        }
        Ok(())
    }

    /// The open point a write segment goes to. Points: plain/partial 0; multi-stream the
    /// handle; AutoStream its stream; PLAN 0 default big, 1..=L big by class, L+1 default
    /// small, L+2.. small by class (NoPred: 0 big, 1 small).
    fn point_of(
        &mut self,
        chunk: usize,
        lba: u64,
        blocks: u64,
        big: bool,
        handle: usize,
        now_units: u64,
    ) -> usize {
        match self.plan.scheme {
            PlanScheme::Plain | PlanScheme::PartialGc => 0,
            PlanScheme::MultiStream => handle.min(self.open.len() - 2),
            PlanScheme::AutoStream => match &mut self.autostream {
                Some(a) => a.on_write(chunk, lba, blocks, now_units) as usize,
                None => 0,
            },
            PlanScheme::PlanNoPred => usize::from(!big),
            PlanScheme::PlanPred => {
                let class = self.predictor.as_mut().and_then(|p| p.on_write(chunk, now_units));
                let base = if big { 0 } else { 1 + self.plan.lifetime_classes as usize };
                base + class.map_or(0, |c| 1 + c as usize)
            }
            PlanScheme::PlanOracle => {
                // Stream 0 has no class; streams beyond the classes share the last one.
                let base = if big { 0 } else { 1 + self.plan.lifetime_classes as usize };
                let class = handle.min(self.plan.lifetime_classes as usize);
                base + class
            }
        }
    }

    /// Maps logical slot `logical` to a fresh slot of `point`'s superblock.
    fn write_slot(
        &mut self,
        logical: u64,
        point: usize,
        counters: &mut Counters,
    ) -> Result<(), EmuError> {
        let index = logical as usize;
        let old = self.l2p[index];
        if old != UNMAPPED {
            self.invalidate(old);
        }
        let slot = match self.take_slot(point, counters) {
            Ok(slot) => slot,
            Err(e) => {
                self.l2p[index] = UNMAPPED;
                return Err(e);
            }
        };
        self.l2p[index] = slot;
        self.p2l[slot as usize] = logical as u32;
        self.valid_bits.set(slot);
        Ok(())
    }

    /// Deallocates `blocks` LBAs; the predictor learns that their chunks' data died. In page
    /// mode only the pages the range covers whole are unmapped: a page with one live LBA left
    /// stays (FEMU unmaps every page a trim touches, which loses that LBA's data).
    pub(crate) fn trim(&mut self, lba: u64, blocks: u64, now_units: u64) {
        let first = lba.div_ceil(1 << self.lba_shift);
        let end = (lba + blocks) >> self.lba_shift;
        for index in first..end.max(first) {
            let old = self.l2p[index as usize];
            if old != UNMAPPED {
                self.invalidate(old);
                self.l2p[index as usize] = UNMAPPED;
            }
        }
        if let Some(predictor) = &mut self.predictor {
            let first = (lba >> self.lba_shift) >> self.chunk_shift;
            let last = ((lba + blocks.max(1) - 1) >> self.lba_shift) >> self.chunk_shift;
            for chunk in first..=last {
                predictor.on_trim(chunk as usize, now_units);
            }
        }
    }

    fn invalidate(&mut self, slot: u32) {
        let block = (slot / self.slots_per_block) as usize;
        let group = self.block_group[block];
        debug_assert!(self.block_valid[block] > 0 && group != NONE);
        self.valid_bits.clear(slot);
        self.block_valid[block] -= 1;
        self.group_valid[group as usize] -= 1;
        if let Some(per_chip) = &mut self.block_buckets {
            let (chip, local) =
                (block as u32 / self.blocks_per_chip, block as u32 % self.blocks_per_chip);
            per_chip[chip as usize].decremented(local, self.block_valid[block]);
        } else {
            let valid = self.group_valid[group as usize];
            self.group_buckets(group).decremented(group, valid);
        }
    }

    /// The bucket set a sealed group is in: by width and aligned chip group.
    fn group_buckets(&mut self, group: u32) -> &mut ValidBuckets {
        let index = group as usize;
        let first = self.group_first_chip[index];
        if self.group_width[index] == self.big_width_blocks() {
            &mut self.big_buckets[(first / self.big_chips) as usize]
        } else {
            &mut self.small_buckets[(first / self.plan.small_chips_per_channel) as usize]
        }
    }

    fn big_width_blocks(&self) -> u32 {
        self.channels * self.big_chips
    }

    fn group_slots(&self, group: u32) -> u32 {
        self.group_width[group as usize] * self.slots_per_block
    }

    /// The physical slot at `offset` of `group`: page `offset / slots_per_page` lives on
    /// block `page % width`, page-striped so consecutive pages go to different chips.
    fn slot_at(&self, group: u32, offset: u32) -> u32 {
        let width = self.group_width[group as usize];
        let page = offset / (self.page_mask + 1);
        let base = group as usize * self.big_width_blocks() as usize;
        let block = self.group_blocks[base + (page % width) as usize];
        let in_block = (page / width) * (self.page_mask + 1) + (offset & self.page_mask);
        debug_assert!(in_block < self.slots_per_block);
        block * self.slots_per_block + in_block
    }

    fn take_slot(&mut self, point: usize, counters: &mut Counters) -> Result<u32, EmuError> {
        let open = self.open[point];
        if open.group == NONE || open.next_offset >= self.group_slots(open.group) {
            self.replace_open(point, counters, true)?;
        }
        let open = self.open[point];
        let slot = self.slot_at(open.group, open.next_offset);
        self.open[point].next_offset += 1;
        self.block_valid[(slot / self.slots_per_block) as usize] += 1;
        self.group_valid[open.group as usize] += 1;
        // Counted when the flash page is complete, as in the conventional FTL.
        if (open.next_offset + 1) & self.page_mask == 0 {
            counters.flash_host_bytes += self.flash_page_bytes;
        }
        self.clock += 1;
        Ok(slot)
    }

    /// Where `lba`'s data is, as the timing model's 4 KiB slot numbering for full-width
    /// superblocks (span = chips_per_channel) would name that chip, page and slot: the timing
    /// model then charges the right chip and channel.
    pub(crate) fn timing_slot_of(&self, lba: u64) -> Option<u32> {
        let slot = self.l2p[(lba >> self.lba_shift) as usize];
        if slot == UNMAPPED {
            return None;
        }
        let block = slot / self.slots_per_block;
        let chip_index = block / self.blocks_per_chip;
        let (channel, chip) =
            (chip_index / self.chips_per_channel, chip_index % self.chips_per_channel);
        let in_block = slot % self.slots_per_block;
        let slots_per_page = self.page_mask + 1;
        let offset = if self.lba_shift == 0 {
            in_block & self.page_mask
        } else {
            (lba & u64::from(self.lbas_per_page - 1)) as u32
        };
        let device_width = self.channels * self.chips_per_channel;
        let page = (in_block / slots_per_page) * device_width + chip * self.channels + channel;
        let superblock_slots = device_width * self.pages_per_block * self.lbas_per_page;
        let fake = u64::from(block % self.blocks_per_chip) * u64::from(superblock_slots)
            + u64::from(page * self.lbas_per_page + offset);
        u32::try_from(fake).ok()
    }

    /// `timing_slot_of` for LBA `lba` of a write ending before `end`: in page mode the
    /// request's last LBA in each page names the page's last slot, so the timing model charges
    /// one program for every page the write touches (it programs when a page's last slot is
    /// written).
    pub(crate) fn timing_write_slot_of(&self, lba: u64, end: u64) -> Option<u32> {
        let slot = self.timing_slot_of(lba)?;
        if self.lba_shift > 0 && lba + 1 == end {
            Some(slot | (self.lbas_per_page - 1))
        } else {
            Some(slot)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ftl_with(scheme: &str, sets: &[(&str, &str)]) -> PlanFtl {
        let mut config = Config::preset("plan").unwrap_or_else(|e| panic!("{e}"));
        for (key, value) in
            [("channels", "2"), ("blocks-per-chip", "512"), ("pages-per-block", "2")]
        {
            config.set(key, value).unwrap_or_else(|e| panic!("{e}"));
        }
        config.set("plan.scheme", scheme).unwrap_or_else(|e| panic!("{e}"));
        for (key, value) in sets {
            config.set(key, value).unwrap_or_else(|e| panic!("{e}"));
        }
        config.validate().unwrap_or_else(|e| panic!("{e}"));
        let plan = config.plan.unwrap_or_default();
        PlanFtl::new(&config, &plan, &config.layout()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// 4 KiB map entries, and only the superblocks a scheme writes open: the routing and
    /// victim tests below count slots and open points.
    const SLOTS_AS_USED: [(&str, &str); 2] =
        [("plan.map-unit", "slot"), ("plan.device-streams", "0")];

    fn ftl(scheme: &str) -> PlanFtl {
        ftl_with(scheme, &SLOTS_AS_USED)
    }

    #[test]
    fn requests_of_eight_pages_go_big_smaller_ones_small() {
        let mut f = ftl("plan-nopred");
        // 16 KiB pages: 4 LBAs each. 32 LBAs aligned = 8 pages: big; 28 = 7 pages: small;
        // 29 LBAs starting mid-page span 8 pages: big.
        let mut counters = Counters::new(1);
        f.write(0, 32, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        f.write(1000, 28, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        f.write(2002, 29, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        let width = |f: &PlanFtl, lba: u64| {
            let slot = f.l2p[lba as usize];
            f.group_width[f.block_group[(slot / f.slots_per_block) as usize] as usize]
        };
        assert_eq!(width(&f, 0), 16, "big superblock: 2 channels x 8 chips");
        assert_eq!(width(&f, 1000), 4, "small superblock: 2 channels x 2 chips");
        assert_eq!(width(&f, 2002), 16);
    }

    #[test]
    fn oracle_classes_are_the_host_streams() {
        let mut f = ftl("plan-oracle");
        let classes = f.plan.lifetime_classes as usize;
        // Stream 0: the default points; stream s: class s, whatever the chunk's history.
        assert_eq!(f.point_of(0, 0, 1, false, 0, 0), classes + 1);
        assert_eq!(f.point_of(0, 0, 1, false, 3, 0), classes + 1 + 3);
        assert_eq!(f.point_of(0, 0, 1, false, 3, 500), classes + 1 + 3);
        assert_eq!(f.point_of(1, 128, 64, true, 2, 0), 2);
        // Streams beyond the classes share the last.
        assert_eq!(f.point_of(1, 128, 64, true, classes + 5, 0), classes);
    }

    #[test]
    fn predicted_classes_pick_their_own_superblocks() {
        let mut f = ftl("plan-pred");
        let classes = f.plan.lifetime_classes as usize;
        // No history: default small (L + 1) or default big (0).
        assert_eq!(f.point_of(0, 0, 1, false, 0, 0), classes + 1);
        assert_eq!(f.point_of(1, 128, 64, true, 0, 0), 0);
        // Chunk 0 rewritten 5 units later: class 2 ([3, 7)), small: L + 2 + 2.
        assert_eq!(f.point_of(0, 0, 1, false, 0, 5), classes + 2 + 2);
        // Chunk 1 rewritten big 0 units later: class 0, big point 1.
        assert_eq!(f.point_of(1, 128, 64, true, 0, 0), 1);
    }

    #[test]
    fn baselines_route_by_stream_or_not_at_all() {
        let mut plain = ftl("plain");
        assert_eq!(plain.point_of(0, 0, 1, false, 3, 0), 0);
        assert_eq!(plain.open.len(), 2, "one host point and GC's");
        let mut auto = ftl("autostream");
        assert_eq!(auto.open.len(), 8 + 1);
        assert_eq!(auto.point_of(0, 0, 1, false, 0, 0), 0);
        assert_eq!(auto.point_of(0, 50, 1, false, 0, 0), 1, "second write of the chunk: count 2");
    }

    #[test]
    fn page_map_programs_every_page_a_write_touches_whole() {
        let sets = [("plan.map-unit", "page"), ("plan.device-streams", "0")];
        let mut f = ftl_with("plain", &sets);
        let mut counters = Counters::new(1);
        let page = 16384;
        // One 4 KiB LBA of page 1: the page is written whole.
        f.write(5, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.flash_host_bytes, page);
        assert!(f.l2p[1] != UNMAPPED && f.l2p[0] == UNMAPPED);
        // Another LBA of the same page rewrites it: one valid page, two programmed.
        f.write(4, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.flash_host_bytes, 2 * page);
        assert_eq!(f.group_valid.iter().sum::<u32>(), 1);
        // Four aligned LBAs are one page; four from LBA 14 touch two.
        f.write(8, 4, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.flash_host_bytes, 3 * page);
        f.write(14, 4, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counters.flash_host_bytes, 5 * page);
        assert_eq!(f.group_valid.iter().sum::<u32>(), 4, "pages 1, 2, 3, 4");
        // The timing model sees one program per page: the request's last LBA in it.
        let last = |slot: Option<u32>| slot.map(|s| s % 4 == 3);
        assert_eq!(last(f.timing_write_slot_of(5, 6)), Some(true));
        let programs = (8..12).filter(|&l| last(f.timing_write_slot_of(l, 12)) == Some(true));
        assert_eq!(programs.count(), 1);
        // A trim unmaps only the pages it covers whole.
        f.trim(4, 2, 0);
        assert!(f.l2p[1] != UNMAPPED);
        f.trim(4, 4, 0);
        assert_eq!(f.l2p[1], UNMAPPED);
        f.check().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn femu_streams_open_their_superblocks_at_start_written_or_not() {
        let blocks = 2 * 8 * 512;
        let plain = ftl_with("plain", &[("plan.device-streams", "16")]);
        // Default stream, 16 streams, GC: 18 full-width (16-block) superblocks.
        assert_eq!(plain.open.len(), 18);
        assert!(plain.open.iter().all(|p| p.group != NONE));
        assert_eq!(plain.free_blocks, blocks - 18 * 16);
        // PLAN: 9 big and 9 small (2 channels x 2 chips) host superblocks and GC's.
        let pred = ftl_with("plan-pred", &[("plan.device-streams", "16")]);
        assert_eq!(pred.open.len(), 19);
        assert_eq!(pred.free_blocks, blocks - 10 * 16 - 9 * 4);
        let nopred = ftl_with("plan-nopred", &[("plan.device-streams", "16")]);
        assert_eq!(nopred.free_blocks, pred.free_blocks, "the same superblocks open");
        // Without FEMU's set, a scheme opens only what it writes, when it first writes.
        let used = ftl_with("plain", &[("plan.device-streams", "0")]);
        assert_eq!((used.open.len(), used.free_blocks), (2, blocks));
    }

    #[test]
    fn victims_are_chosen_by_valid_ratio_across_widths() {
        let mut f = ftl("plan-nopred");
        let mut counters = Counters::new(1);
        // One big superblock (16 blocks x 8 slots = 128) and four small (4 x 8 = 32 each).
        f.write(0, 128, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        for lba in 1000..1128 {
            f.write(lba, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        }
        // Seal both by one more write each.
        f.write(2000, 32, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        f.write(3000, 1, 0, 0, &mut counters).unwrap_or_else(|e| panic!("{e}"));
        // Big: 100 of 128 stale (ratio 0.22); a small one: 20 of 32 stale (ratio 0.375).
        f.trim(0, 100, 0);
        f.trim(1000, 20, 0);
        let victim = f.group_victim(None).unwrap_or_else(|| panic!("no victim"));
        assert_eq!(f.group_width[victim as usize], 16);
        f.take_group(victim);
        // The next is the small one with 12 valid of 32.
        assert_eq!(f.group_victim(None).map(|g| f.group_valid[g as usize]), Some(12));
    }
}
