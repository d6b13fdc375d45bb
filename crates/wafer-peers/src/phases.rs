//! One engine through the phases: open, load, (on an emulated SSD: fill to the stated
//! utilization), A B C F per distribution, close; a row per phase with the host bytes of the
//! engine's processes and, on the emulator, the device's and the flash's bytes.

use std::time::Duration;

use flashemu::Counters;

use super::config::PeersConfig;
use super::durability::Durability;
use super::emu_device::EmuView;
use super::engine::EngineKind;
use super::error::PeerError;
use super::peer::{Peer, LAZY_SYNC_INTERVAL};
use super::procio::HostIo;
use super::report::Row;
use super::setup::PeerSetup;
use super::watch::{self, dir_usage, Gauged, Watch};
use wafer_harness::metrics::{CounterSnapshot, HistogramSummary};
use wafer_harness::progress::Progress;
use wafer_harness::runner::{self, KvTarget, RunSpec, Stop, Warmup};
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::Workload;

/// Which engine, device and round a row belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement<'a> {
    pub device: &'a str,
    pub engine: EngineKind,
    /// The row's engine name: the engine's, or a raw row's own.
    pub name: &'a str,
    pub round: u32,
}

/// What one phase measured.
struct Measured {
    phase: String,
    distribution: String,
    ops: u64,
    elapsed_s: f64,
    latency: Option<HistogramSummary>,
    /// Operations that wrote a record (insert, update, read-modify-write).
    record_writes: u64,
    io: HostIo,
    flash: Option<Counters>,
    /// The engine's own counters over the phase (Wafer's bytes by purpose; zeros elsewhere).
    engine: CounterSnapshot,
    /// Bytes the engine wrote by file kind over the phase (RocksDB's tickers; empty elsewhere).
    kinds: Vec<(&'static str, u64)>,
    /// Write phases on the emulated SSD: (operations, device counters) over the phase's last
    /// half of writes (from the mark at half its volume to its end).
    steady: Option<(u64, Counters)>,
}

/// Runs the engine; returns its settings. `emu` is the emulated SSD the engine's directory is
/// on (with the utilization to fill it to after the load); the settings then add how much of
/// its filesystem was in use before the load, after it and at the end. Every run states the
/// most space the engine's files took at any time (`dir_used_peak_bytes`, read by a watcher
/// thread every half second and at each phase's end).
pub(crate) fn run_engine(
    config: &PeersConfig,
    at: &Placement<'_>,
    setup: &PeerSetup,
    emu: Option<&EmuView>,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<serde_json::Value, PeerError> {
    let peer = at.engine.open(setup)?;
    let mut settings = peer.target().describe();
    let mut space = serde_json::Map::new();
    if let Some(view) = emu {
        let (total, used) = view.usage()?;
        space.insert("emu_fs_bytes".into(), total.into());
        space.insert("emu_used_before_load_bytes".into(), used.into());
    }
    let lazy = setup.durability == Durability::Lazy;
    let peak = watch::watching(peer.as_ref(), &setup.dir, emu, lazy, |watch| {
        let run = Run { config, at, setup, emu, peer: peer.as_ref(), watch };
        run.load(progress, on_row)?;
        space.insert("dir_used_after_load_bytes".into(), dir_usage(&setup.dir)?.into());
        if let Some(view) = emu {
            space.insert("emu_used_after_load_bytes".into(), view.usage()?.1.into());
            space.insert("emu_filler_bytes".into(), view.fill_to(view.fill)?.into());
        }
        run.phases(progress, on_row)?;
        watch.read();
        Ok::<_, PeerError>((watch.peak_dir_bytes(), watch.syncs()))
    })?;
    let (peak, (syncs, sync_failures)) = peak;
    space.insert("dir_used_peak_bytes".into(), peak.into());
    if lazy {
        space.insert(
            "lazy_sync".into(),
            serde_json::json!({
                "interval_s": LAZY_SYNC_INTERVAL.as_secs_f64(),
                "syncs": syncs,
                "failures": sync_failures,
            }),
        );
    }
    peer.target().close().map_err(|e| failed(at.engine, "close", &e))?;
    drop(peer);
    if let Some(view) = emu {
        space.insert("emu_used_at_end_bytes".into(), view.usage()?.1.into());
        space.insert("emu_capacity_bytes".into(), view.capacity_bytes.into());
    }
    if let Some(map) = settings.as_object_mut() {
        map.extend(space);
    }
    Ok(settings)
}

fn failed(engine: EngineKind, phase: &str, e: &dyn std::fmt::Display) -> PeerError {
    PeerError::Run { engine: engine.name().into(), phase: phase.into(), message: e.to_string() }
}

/// One engine's run in progress.
struct Run<'a> {
    config: &'a PeersConfig,
    at: &'a Placement<'a>,
    setup: &'a PeerSetup,
    emu: Option<&'a EmuView>,
    peer: &'a dyn Peer,
    watch: &'a Watch<'a>,
}

impl Run<'_> {
    fn spec(&self, workload: Workload, distribution: Distribution) -> RunSpec {
        RunSpec {
            label: format!("{} {} {distribution}", self.at.name, workload.name()),
            workload: self.config.workload(workload, distribution),
            threads: self.config.threads,
            seed: self.config.seed,
            load: false,
            fill_target_bytes: None,
            load_batch: 1,
            stop: self.config.stop,
            warmup: Warmup::None,
            interval: Duration::from_secs(1),
        }
    }

    fn load(
        &self,
        progress: &mut dyn Progress,
        on_row: &mut dyn FnMut(&Row),
    ) -> Result<(), PeerError> {
        let mut spec = self.spec(Workload::A, Distribution::Uniform);
        spec.label = format!("{} load", self.at.name);
        spec.load = true;
        spec.load_batch = self.config.load_batch;
        spec.stop = Stop::Ops(1);
        let (figures, m) = measure(self.peer, self.emu, || {
            runner::load_open(self.peer.target(), &spec, progress)
                .map_err(|e| failed(self.at.engine, "load", &e))
        })?;
        let load = Measured {
            phase: "load".into(),
            distribution: "-".into(),
            ops: figures.ops,
            elapsed_s: figures.elapsed_s,
            latency: None,
            record_writes: figures.ops,
            io: m.io,
            flash: m.flash,
            engine: m.engine,
            kinds: m.kinds,
            steady: None,
        };
        on_row(&row(self.at, self.setup, &load));
        Ok(())
    }

    /// A B C F per distribution. On an emulated SSD with a write volume set, the phases that
    /// write on half their operations or more (A, F) end once the device has received that
    /// many capacities of host writes (its own counter; or at the time limit); the others end
    /// by `config.stop`.
    fn phases(
        &self,
        progress: &mut dyn Progress,
        on_row: &mut dyn FnMut(&Row),
    ) -> Result<(), PeerError> {
        let gauged = self.emu.zip(self.config.emu_write_phases).map(|(view, volume)| {
            let target = Gauged {
                inner: self.peer.target(),
                watch: self.watch,
                capacity_bytes: view.capacity_bytes,
            };
            (target, volume)
        });
        for (d, distribution) in self.config.distributions.iter().enumerate() {
            for (w, workload) in self.config.workloads.iter().enumerate() {
                let mut spec = self.spec(*workload, *distribution);
                spec.seed = self.config.seed ^ ((d * 16 + w + 1) as u64);
                let m = &spec.workload.mix;
                let (target, volume): (&dyn KvTarget, _) = match &gauged {
                    Some((target, volume)) if m.update + m.insert + m.read_modify_write >= 0.5 => {
                        spec.stop = volume.stop();
                        (target, Some((volume, target.capacity_bytes)))
                    }
                    _ => (self.peer.target(), None),
                };
                let (report, measured) = measure(self.peer, self.emu, || {
                    self.watch.read_writes();
                    if let Some((volume, capacity)) = volume {
                        let half = (volume.capacities * capacity as f64 / 2.0) as u64;
                        self.watch.arm_mark(self.watch.written_bytes() + half);
                    }
                    runner::run_open(target, &spec, serde_json::Value::Null, progress)
                        .map_err(|e| failed(self.at.engine, workload.name(), &e))
                })?;
                let mark = self.watch.take_armed();
                self.watch.read();
                let steady = match (mark, &measured.end) {
                    (Some((ops, at)), Some(end)) => {
                        Some((report.summary.ops.saturating_sub(ops), end.since(&at)))
                    }
                    _ => None,
                };
                let writes = ["insert", "update", "read_modify_write"];
                let measured = Measured {
                    phase: workload.name().into(),
                    distribution: distribution_name(distribution),
                    ops: report.summary.ops,
                    elapsed_s: report.summary.elapsed_s,
                    latency: report.latency.get("all").copied(),
                    record_writes: writes
                        .iter()
                        .filter_map(|k| report.latency.get(*k))
                        .map(|h| h.count)
                        .sum(),
                    io: measured.io,
                    flash: measured.flash,
                    engine: measured.engine,
                    kinds: measured.kinds,
                    steady,
                };
                on_row(&row(self.at, self.setup, &measured));
            }
        }
        Ok(())
    }
}

/// What [`measure`] read around a phase.
struct Readings {
    io: HostIo,
    /// The device's counters over the phase.
    flash: Option<Counters>,
    /// The device's counters at the phase's end.
    end: Option<Counters>,
    engine: CounterSnapshot,
    kinds: Vec<(&'static str, u64)>,
}

/// Runs `phase` between two readings of the peer's host I/O, its own counters and, on an
/// emulated SSD, of the device's counters (taken after a filesystem sync, so a phase's
/// writeback is its own; on the raw device, in pairs with the engine's: [`paired`]).
fn measure<T>(
    peer: &dyn Peer,
    staged: Option<&EmuView>,
    phase: impl FnOnce() -> Result<T, PeerError>,
) -> Result<(T, Readings), PeerError> {
    let (raw, synced) = (staged.filter(|s| s.is_raw()), staged.filter(|s| !s.is_raw()));
    let flash_before = synced.map(|s| s.counters()).transpose()?;
    let before = peer.host_io()?;
    let (engine_before, raw_before) = paired(peer, raw)?;
    let flash_before = flash_before.or(raw_before);
    let kinds_before = peer.written_by_kind();
    let out = phase()?;
    let (engine_after, raw_end) = paired(peer, raw)?;
    let engine = engine_after.since(&engine_before);
    let kinds = peer
        .written_by_kind()
        .into_iter()
        .map(|(k, v)| {
            let earlier = kinds_before.iter().find(|(b, _)| *b == k).map_or(0, |(_, b)| *b);
            (k, v.saturating_sub(earlier))
        })
        .collect();
    let after = peer.host_io()?;
    let end = match synced {
        Some(s) => Some(s.counters()?),
        None => raw_end,
    };
    let flash = end.as_ref().zip(flash_before.as_ref()).map(|(e, b)| e.since(b));
    Ok((out, Readings { io: before.until(&after), flash, end, engine, kinds }))
}

/// Readings of a raw device's counters taken back to back with the engine's.
const PAIRED_TRIES: u32 = 8;

/// The engine's counters and, on the raw device, the device's at the same moment: a reading of
/// the device before and after the engine's that agree (else the last of [`PAIRED_TRIES`]).
/// Only the engine writes there, so a background flush between two separate readings would
/// land in the device's phase and not the engine's; paired, both count it in the same phase.
fn paired(
    peer: &dyn Peer,
    raw: Option<&EmuView>,
) -> Result<(CounterSnapshot, Option<Counters>), PeerError> {
    let Some(view) = raw else {
        return Ok((peer.target().counters(), None));
    };
    let mut device = view.counters()?;
    for _ in 0..PAIRED_TRIES {
        let engine = peer.target().counters();
        let again = view.counters()?;
        if again.host_write_bytes == device.host_write_bytes {
            return Ok((engine, Some(again)));
        }
        device = again;
    }
    Ok((peer.target().counters(), Some(device)))
}

/// `zipf` for YCSB's (scrambled) zipfian, else the distribution's own name.
fn distribution_name(d: &Distribution) -> String {
    match d {
        Distribution::ScrambledZipfian { .. } => "zipf".into(),
        other => other.to_string(),
    }
}

fn row(at: &Placement<'_>, setup: &PeerSetup, m: &Measured) -> Row {
    let per_op = |bytes: u64| if m.ops == 0 { 0.0 } else { bytes as f64 / m.ops as f64 };
    let us = |ns: u64| ns as f64 / 1000.0;
    let record_bytes = m.record_writes * u64::from(setup.value_size_bytes + setup.key_bytes);
    let flash = m.flash.as_ref();
    Row {
        round: at.round,
        engine: at.name.into(),
        device: at.device.into(),
        phase: m.phase.clone(),
        distribution: m.distribution.clone(),
        ops: m.ops,
        elapsed_s: m.elapsed_s,
        ops_per_sec: if m.elapsed_s > 0.0 { m.ops as f64 / m.elapsed_s } else { 0.0 },
        p50_us: m.latency.map(|l| us(l.p50_ns)),
        p99_us: m.latency.map(|l| us(l.p99_ns)),
        p999_us: m.latency.map(|l| us(l.p999_ns)),
        host_write_bytes: m.io.net_write_bytes(),
        host_read_bytes: m.io.read_bytes,
        host_write_bytes_per_op: per_op(m.io.net_write_bytes()),
        host_read_bytes_per_op: per_op(m.io.read_bytes),
        device_write_bytes_per_op: flash.map(|c| per_op(c.host_write_bytes)),
        flash_bytes_per_op: flash.map(|c| per_op(c.flash_bytes())),
        db_waf: flash
            .filter(|_| record_bytes > 0)
            .map(|c| c.host_write_bytes as f64 / record_bytes as f64),
        ssd_waf: flash.and_then(Counters::waf),
        steady_flash_bytes_per_op: m
            .steady
            .as_ref()
            .filter(|(ops, _)| *ops > 0)
            .map(|(ops, c)| c.flash_bytes() as f64 / *ops as f64),
        steady_ssd_waf: m.steady.as_ref().and_then(|(_, c)| c.waf()),
        flash_breakdown: flash.map(|c| breakdown(at.engine, m, c)),
        total_waf: flash
            .filter(|_| record_bytes > 0)
            .map(|c| c.flash_bytes() as f64 / record_bytes as f64),
    }
}

/// Flash bytes per operation by what wrote them, the parts in [`BREAKDOWN_PARTS`] order
/// adding up to the row's flash B/op. Wafer counts its writes by purpose, RocksDB by file
/// kind (its tickers: WAL, SST, blob files); the filesystem's part is what the device received
/// beyond them (0 when the page cache absorbed more than ext4 added: then the engine's parts
/// are scaled down to the device's bytes), SSD GC what the flash programmed beyond the
/// device's writes (GC copies and padding). Engines that count nothing by kind are one part.
/// On the raw served device nothing but the engine writes, so its parts are scaled to the
/// device's bytes either way and there is no filesystem part: what the device received beyond
/// the engine's count of a phase is its background writes between the two readings at the
/// phase's ends, the engine's own bytes.
fn breakdown(
    engine: EngineKind,
    m: &Measured,
    flash: &Counters,
) -> std::collections::BTreeMap<String, f64> {
    let ops = m.ops;
    let per_op = |bytes: f64| if ops == 0 { 0.0 } else { bytes / ops as f64 };
    let device = flash.host_write_bytes;
    let own = &m.engine;
    let mut parts: Vec<(&str, u64)> = if engine.is_wafer() {
        // `user_bytes` holds the blob pages too (the device's Blob purpose): apart here.
        let pages = own.user_bytes.saturating_sub(own.blob_bytes)
            + own.padding_bytes
            + own.doublewrite_bytes;
        vec![
            ("wal", own.wal_bytes),
            ("user pages", pages),
            ("blobs", own.blob_bytes),
            ("db gc", own.gc_copy_bytes),
            ("compensation", own.compensation_bytes),
            ("metadata", own.metadata_bytes),
        ]
    } else {
        m.kinds.clone()
    };
    let mine: u64 = parts.iter().map(|(_, v)| v).sum();
    let mut out: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
    if parts.is_empty() {
        out.insert("engine + filesystem".into(), per_op(device as f64));
    } else {
        let raw = engine == EngineKind::WaferRaw;
        let scale =
            if mine > device || (raw && mine > 0) { device as f64 / mine as f64 } else { 1.0 };
        for (k, v) in parts.drain(..) {
            out.insert(k.into(), per_op(v as f64 * scale));
        }
        if !raw {
            out.insert("filesystem".into(), per_op(device.saturating_sub(mine) as f64));
        }
    }
    out.insert("ssd gc".into(), per_op(flash.flash_bytes().saturating_sub(device) as f64));
    out
}

/// The order the breakdown's parts stack in (charts, tables).
pub const BREAKDOWN_PARTS: [&str; 13] = [
    "wal",
    "user pages",
    "blobs",
    "sst",
    "blob files",
    "tables",
    "heap",
    "db gc",
    "compensation",
    "metadata",
    "filesystem",
    "engine + filesystem",
    "ssd gc",
];
