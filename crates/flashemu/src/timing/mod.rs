//! Device time, when asked for (`[timing] mode`): the FTL decides what the flash does, this
//! module decides when. Off by default, and then absent: `Ssd` holds `None` and the FTL's hot
//! path is the same code it always was (one `is_some` test per host command).
//!
//! Chip mode is a closed loop of `queue_depth` host commands. A command is issued when one of
//! the in-flight commands completes; each of its flash operations waits for its chip and
//! channel to be free. Writes move each 4 KiB over the channel into the chip's page register
//! and complete then, except the write that fills a flash page, which waits for the program.
//! A read senses each flash page it touches once (tR loads the whole page into the chip's page
//! register), then moves each 4 KiB slot it asked for over the channel, pages whose sense ends
//! first going first. GC runs where the FTL runs it, inside
//! the host write that needed a free superblock: its reads, programs and erases are charged
//! to the chips at that command's issue, so host commands behind them wait: GC steals chip
//! time in proportion to the copies it makes (SSD WAF - 1 per host page).
//!
//! Placement: page p of a superblock lives on block `p % blocks_per_superblock` of it, channel
//! fastest (page striping, as superblock FTLs do); a read finds its chip from the LBA's slot.
//! GC work, whose victims the counters do not name, is spread over all chips in turn.
//!
//! A CCZNS device (002) adds its compression engine: a compressed write first passes the
//! compressor (one device-wide pipelined engine: busy for bytes / throughput, result after a
//! further fixed latency), then its compressed bytes go to flash as a write; a decompressed
//! read senses its pages (once each, as any read), then passes the decompressor. Engine time queues like chip time.
//!
//! A FLUSH is a barrier: the host issues it after every write it wants durable and issues
//! nothing behind it until it completes, and it completes once every command the device
//! accepted before it has completed. In chip mode a completed write is durable already: the
//! write that fills a flash page completed only after its program, and a partly filled page
//! waits in the (power-loss protected) write buffer, which a flush does not program (the
//! `Ssd` docs). So a flush waits for the in-flight commands to finish, the last program among
//! them included, and adds no flash work; what it costs is the overlap lost, since the
//! commands behind it start only then. GC copies are the device's own and are not waited for.
//! In MQSSD mode the same barrier falls on the device-wide server's clock.
//!
//! MQSSD mode replaces the chips by 001's fitted costs at k = queue depth: one device-wide
//! server, a setup s(k) or t(k) per random command plus beta(k) or alpha(k) per page. The
//! fitted device does its own GC, so the emulator's GC costs nothing there.
pub mod config;
mod histogram;
mod pages;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

pub use config::{MqssdCosts, TimingConfig, TimingMode, QUEUE_DEPTH_MAX};
pub use histogram::LatencySummary;

use crate::config::Config;
use crate::counters::Counters;
use crate::layout::Layout;
use histogram::Histogram;
use pages::{group_by_page, PageRead};

/// Where the flash is: what maps a slot to its chip and channel.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    channels: u64,
    chips_per_channel: u64,
    span: u64,
    chip_groups: u64,
    slots_per_page: u64,
    slots_per_superblock: u64,
    blocks_per_superblock: u64,
    flash_page_bytes: u64,
}

impl Geometry {
    fn chips(&self) -> u64 {
        self.channels * self.chips_per_channel
    }

    /// (chip, channel) of a physical slot.
    fn place(&self, slot: u64) -> (usize, usize) {
        let superblock = slot / self.slots_per_superblock;
        let page = (slot % self.slots_per_superblock) / self.slots_per_page;
        let block = page % self.blocks_per_superblock;
        let channel = block % self.channels;
        let chip = (superblock % self.chip_groups) * self.span + block / self.channels;
        ((channel * self.chips_per_channel + chip) as usize, channel as usize)
    }
}

/// Flash work seen in the counters so far (GC does not report per operation).
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    gc_bytes: u64,
    gc_copied_blocks: u64,
    block_erases: u64,
}

#[derive(Debug)]
pub(crate) struct Timing {
    config: TimingConfig,
    geometry: Geometry,
    chip_free_ns: Vec<u64>,
    channel_free_ns: Vec<u64>,
    /// Completion times of the commands in flight (at most queue_depth).
    in_flight: BinaryHeap<Reverse<u64>>,
    last_issue_ns: u64,
    end_ns: u64,
    window_start_ns: u64,
    seen: Seen,
    gc_cursor: u64,
    /// MQSSD mode: the device-wide server's clock and where recent commands ended.
    mqssd_clock_ns: f64,
    cursors: Vec<u64>,
    cursor_next: usize,
    /// When the device's compressor and decompressor are next free (CCZNS).
    compressor_free_ns: u64,
    decompressor_free_ns: u64,
    /// Scratch for the flash pages of the read being timed (kept to allocate nothing per read).
    read_pages: Vec<PageRead>,
    stats: Stats,
}

/// One host command as the timing model sees it: the `blocks` from `lba` that reach (or come
/// from) flash, the `host_bytes` it moves, and any compression-engine work on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Io {
    pub(crate) lba: u64,
    pub(crate) blocks: u64,
    pub(crate) host_bytes: u64,
    pub(crate) engine: Option<EngineWork>,
}

impl Io {
    /// A plain block command.
    fn blocks(lba: u64, blocks: u64) -> Io {
        Io { lba, blocks, host_bytes: blocks * crate::LBA_BYTES, engine: None }
    }
}

/// Work for the compression engine: its busy time and the fixed latency after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EngineWork {
    pub(crate) busy_ns: u64,
    pub(crate) latency_ns: u64,
}

#[derive(Debug, Clone)]
struct Stats {
    write_bytes: u64,
    read_bytes: u64,
    chip_busy_ns: u64,
    engine_busy_ns: u64,
    gc_busy_ns: u64,
    flushes: u64,
    flush_wait_ns: u64,
    write_latency: Histogram,
    read_latency: Histogram,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            write_bytes: 0,
            read_bytes: 0,
            chip_busy_ns: 0,
            engine_busy_ns: 0,
            gc_busy_ns: 0,
            flushes: 0,
            flush_wait_ns: 0,
            write_latency: Histogram::new(),
            read_latency: Histogram::new(),
        }
    }
}

/// Device-time results since the window began (device creation or the last restart).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingReport {
    pub mode: TimingMode,
    pub queue_depth: u32,
    pub chips: u64,
    pub device_ns: u64,
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    /// Host bytes (read + written) per second of device time.
    pub bytes_per_s: f64,
    /// Summed busy time of all chips; / (chips * device_ns) is their utilisation.
    pub chip_busy_ns: u64,
    /// The part of chip time GC took (reads, programs, erases of copies and victims).
    pub gc_busy_ns: u64,
    /// Busy time of the compression engine (CCZNS: compressor and decompressor summed).
    pub engine_busy_ns: u64,
    /// FLUSH commands, and the device time they waited for the commands before them
    /// (summed; a flush with nothing in flight waits 0).
    pub flushes: u64,
    pub flush_wait_ns: u64,
    pub write_latency: LatencySummary,
    pub read_latency: LatencySummary,
}

/// Commands in MQSSD mode that continue one of this many recent commands are sequential.
const CURSORS_MIN: usize = 1;

impl Timing {
    /// None when timing is off: the device then carries no timing state at all.
    pub(crate) fn new(config: &Config, layout: &Layout) -> Option<Box<Timing>> {
        let timing = config.timing;
        if timing.is_off() {
            return None;
        }
        let g = &config.geometry;
        let geometry = Geometry {
            channels: u64::from(g.channels),
            chips_per_channel: u64::from(g.chips_per_channel),
            span: u64::from(g.superblock_chips_per_channel),
            chip_groups: u64::from(layout.chip_groups),
            slots_per_page: u64::from(layout.slots_per_page),
            slots_per_superblock: u64::from(layout.slots_per_superblock),
            blocks_per_superblock: u64::from(layout.blocks_per_superblock),
            flash_page_bytes: u64::from(layout.flash_page_bytes),
        };
        let cursors = (timing.queue_depth as usize).max(CURSORS_MIN);
        Some(Box::new(Timing {
            config: timing,
            geometry,
            chip_free_ns: vec![0; geometry.chips() as usize],
            channel_free_ns: vec![0; geometry.channels as usize],
            in_flight: BinaryHeap::with_capacity(timing.queue_depth as usize + 1),
            last_issue_ns: 0,
            end_ns: 0,
            window_start_ns: 0,
            seen: Seen::default(),
            gc_cursor: 0,
            mqssd_clock_ns: 0.0,
            cursors: vec![u64::MAX; cursors],
            cursor_next: 0,
            compressor_free_ns: 0,
            decompressor_free_ns: 0,
            read_pages: Vec::new(),
            stats: Stats::new(),
        }))
    }

    /// When the next command may start: once a queue slot is free, and not before the last.
    fn issue(&mut self) -> u64 {
        let mut at = self.last_issue_ns;
        if self.in_flight.len() >= self.config.queue_depth as usize {
            if let Some(Reverse(done)) = self.in_flight.pop() {
                at = at.max(done);
            }
        }
        self.last_issue_ns = at;
        at
    }

    fn complete(&mut self, issued_ns: u64, done_ns: u64, write: bool) {
        debug_assert!(done_ns >= issued_ns);
        self.in_flight.push(Reverse(done_ns));
        self.end_ns = self.end_ns.max(done_ns);
        let histogram =
            if write { &mut self.stats.write_latency } else { &mut self.stats.read_latency };
        histogram.record(done_ns - issued_ns);
    }

    /// Occupies `chip` for `busy_ns` from `at_ns` or when it frees; returns the end.
    fn on_chip(&mut self, chip: usize, at_ns: u64, busy_ns: u64) -> u64 {
        let start = at_ns.max(self.chip_free_ns[chip]);
        self.chip_free_ns[chip] = start + busy_ns;
        self.stats.chip_busy_ns += busy_ns;
        start + busy_ns
    }

    fn on_channel(&mut self, channel: usize, at_ns: u64) -> u64 {
        let start = at_ns.max(self.channel_free_ns[channel]);
        self.channel_free_ns[channel] = start + self.config.transfer_ns;
        start + self.config.transfer_ns
    }

    /// GC work the counters gained since the last command, charged to the chips at `at_ns`.
    fn charge_gc(&mut self, at_ns: u64, counters: &Counters) {
        let page_bytes = self.geometry.flash_page_bytes;
        let programs = (counters.flash_gc_bytes - self.seen.gc_bytes) / page_bytes;
        let reads = counters.gc_copied_blocks / self.geometry.slots_per_page
            - self.seen.gc_copied_blocks / self.geometry.slots_per_page;
        let erases = counters.block_erases - self.seen.block_erases;
        self.seen.gc_bytes += programs * page_bytes;
        self.seen.gc_copied_blocks = counters.gc_copied_blocks;
        self.seen.block_erases = counters.block_erases;
        let chips = self.geometry.chips();
        let work = [
            (reads, self.config.read_ns),
            (programs, self.config.program_ns),
            (erases, self.config.erase_ns),
        ];
        for (count, busy_ns) in work {
            for _ in 0..count {
                let chip = (self.gc_cursor % chips) as usize;
                self.gc_cursor += 1;
                self.on_chip(chip, at_ns, busy_ns);
                self.stats.gc_busy_ns += busy_ns;
            }
        }
    }

    /// A host write of `blocks` LBAs from `lba`, after the FTL placed them; `slot_of` gives
    /// each LBA's physical slot.
    pub(crate) fn write(
        &mut self,
        lba: u64,
        blocks: u64,
        slot_of: &dyn Fn(u64) -> Option<u32>,
        counters: &Counters,
    ) {
        self.write_through(Io::blocks(lba, blocks), slot_of, counters);
    }

    /// A write of `io.host_bytes` that first passes the compressor when `io.engine` is given,
    /// then moves the `io.blocks` it completed from `io.lba` to flash (a compressed write may complete
    /// none: its bytes wait in the buffer with the open page's).
    pub(crate) fn write_through(
        &mut self,
        io: Io,
        slot_of: &dyn Fn(u64) -> Option<u32>,
        counters: &Counters,
    ) {
        let Io { lba, blocks, host_bytes, engine } = io;
        self.stats.write_bytes += host_bytes;
        let issued = self.issue();
        let ready = match engine {
            Some(work) => self.on_engine(true, issued, work),
            None => issued,
        };
        if self.config.mode == TimingMode::Mqssd {
            let done =
                if blocks == 0 { ready } else { self.mqssd_command(ready, lba, blocks, true) };
            self.complete(issued, done.max(ready), true);
            return;
        }
        self.charge_gc(issued, counters);
        let mut done = ready;
        for offset in 0..blocks {
            let slot = slot_of(lba + offset).map_or(lba + offset, u64::from);
            let (chip, channel) = self.geometry.place(slot);
            let mut end = self.on_channel(channel, ready);
            // The slot that fills its flash page is the one that waits for the program.
            if (slot + 1).is_multiple_of(self.geometry.slots_per_page) {
                end = self.on_chip(chip, end, self.config.program_ns);
            }
            done = done.max(end);
        }
        self.complete(issued, done, true);
    }

    /// The compressor (`compress`) or decompressor takes `work` from `at_ns` or when it
    /// frees; returns when the result is out.
    fn on_engine(&mut self, compress: bool, at_ns: u64, work: EngineWork) -> u64 {
        let free =
            if compress { &mut self.compressor_free_ns } else { &mut self.decompressor_free_ns };
        let start = at_ns.max(*free);
        *free = start + work.busy_ns;
        self.stats.engine_busy_ns += work.busy_ns;
        start + work.busy_ns + work.latency_ns
    }

    /// A host read; unwritten LBAs cost no flash time.
    pub(crate) fn read(&mut self, lba: u64, blocks: u64, slot_of: &dyn Fn(u64) -> Option<u32>) {
        self.read_through(Io::blocks(lba, blocks), slot_of);
    }

    /// A read of the `io.blocks` from `io.lba` that returns `io.host_bytes`, through the
    /// decompressor when `io.engine` is given.
    pub(crate) fn read_through(&mut self, io: Io, slot_of: &dyn Fn(u64) -> Option<u32>) {
        let Io { lba, blocks, host_bytes, engine } = io;
        self.stats.read_bytes += host_bytes;
        let issued = self.issue();
        let mut done = if self.config.mode == TimingMode::Mqssd {
            self.mqssd_command(issued, lba, blocks, false)
        } else {
            self.read_chips(issued, lba, blocks, slot_of)
        };
        if let Some(work) = engine {
            done = self.on_engine(false, done, work);
        }
        self.complete(issued, done, false);
    }

    /// Chip mode's read of `blocks` from `lba` issued at `issued_ns`: one sense per flash page
    /// on its chip, then the slots asked for over the channel, the page sensed first moving
    /// first (a controller transfers what is ready). Returns when the last byte is out.
    fn read_chips(
        &mut self,
        issued_ns: u64,
        lba: u64,
        blocks: u64,
        slot_of: &dyn Fn(u64) -> Option<u32>,
    ) -> u64 {
        let mut pages = std::mem::take(&mut self.read_pages);
        let slots_per_page = self.geometry.slots_per_page;
        group_by_page(&mut pages, blocks, slots_per_page, |offset| {
            slot_of(lba + offset).map(u64::from)
        });
        for page in &mut pages {
            let (chip, channel) = self.geometry.place(page.page * slots_per_page);
            page.sensed_ns = self.on_chip(chip, issued_ns, self.config.read_ns);
            page.channel = channel;
        }
        // Stable: pages sensed at the same time keep the order the command touched them.
        pages.sort_by_key(|page| page.sensed_ns);
        let mut done = issued_ns;
        for page in &pages {
            for _ in 0..page.slots {
                done = done.max(self.on_channel(page.channel, page.sensed_ns));
            }
        }
        debug_assert!(done >= issued_ns);
        self.read_pages = pages;
        done
    }

    /// MQSSD: one device-wide server; a command not continuing a recent one pays the setup.
    fn mqssd_command(&mut self, issued_ns: u64, lba: u64, blocks: u64, write: bool) -> u64 {
        let m = self.config.mqssd;
        let (setup_ns, page_ns) = if write { (m.s_ns, m.beta_ns) } else { (m.t_ns, m.alpha_ns) };
        let continued = self.cursors.iter().position(|&end| end == lba);
        let index = continued.unwrap_or(self.cursor_next);
        if continued.is_none() {
            self.cursor_next = (self.cursor_next + 1) % self.cursors.len();
        }
        self.cursors[index] = lba + blocks;
        let cost_ns = if continued.is_some() { 0.0 } else { setup_ns } + blocks as f64 * page_ns;
        let start = self.mqssd_clock_ns.max(issued_ns as f64);
        self.mqssd_clock_ns = start + cost_ns;
        self.stats.chip_busy_ns += cost_ns as u64;
        self.mqssd_clock_ns.ceil() as u64
    }

    /// A FLUSH (see the module docs): issued when a queue slot frees, as any command, it
    /// completes when the last command accepted before it completes, and the next command is
    /// issued no earlier. Returns its completion time.
    pub(crate) fn flush(&mut self) -> u64 {
        let issued = self.issue();
        // Every completion is in `in_flight` or already at or before `last_issue_ns`.
        let drained = self.in_flight.iter().map(|Reverse(done)| *done).max().unwrap_or(issued);
        let done = drained.max(issued);
        self.in_flight.clear();
        self.last_issue_ns = done;
        self.end_ns = self.end_ns.max(done);
        self.stats.flushes += 1;
        self.stats.flush_wait_ns += done - issued;
        done
    }

    /// Device time at which the next host command is issued (PLAN's predictor clock).
    pub(crate) fn clock_ns(&self) -> u64 {
        self.last_issue_ns
    }

    /// Starts a new measuring window at the current end of device time (e.g. after a fill).
    pub(crate) fn restart_window(&mut self) {
        self.window_start_ns = self.end_ns;
        self.stats = Stats::new();
    }

    pub(crate) fn report(&self) -> TimingReport {
        let device_ns = self.end_ns - self.window_start_ns;
        let bytes = self.stats.write_bytes + self.stats.read_bytes;
        let bytes_per_s = if device_ns == 0 { 0.0 } else { bytes as f64 * 1e9 / device_ns as f64 };
        TimingReport {
            mode: self.config.mode,
            queue_depth: self.config.queue_depth,
            chips: self.geometry.chips(),
            device_ns,
            host_write_bytes: self.stats.write_bytes,
            host_read_bytes: self.stats.read_bytes,
            bytes_per_s,
            chip_busy_ns: self.stats.chip_busy_ns,
            gc_busy_ns: self.stats.gc_busy_ns,
            engine_busy_ns: self.stats.engine_busy_ns,
            flushes: self.stats.flushes,
            flush_wait_ns: self.stats.flush_wait_ns,
            write_latency: self.stats.write_latency.summary(),
            read_latency: self.stats.read_latency.summary(),
        }
    }
}
