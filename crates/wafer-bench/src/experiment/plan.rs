//! 004 (PLAN) on the emulator: its FIO mix for every scheme of sec. 4 (Figure 3) and Figure 1
//! (WAF and throughput against the chips per channel a superblock spans).
//!
//! The FIO mix (004 sec. 4): 4 jobs at equal rates, each 50% read / 50% write, uniform random
//! 4 KiB in a file of its own, file sizes 1:10:30:64, on an SSD aged with cold data first.
//! 004 states neither the fill level nor the files' share of it; here cold data takes 20% of the
//! logical space and the four files 50% (70% full; `Fill`, `--cold`, `--files`). Why not fuller:
//! under 004's FEMU trigger (`PlanGcTrigger::PerChip`) a device whose valid data leaves no chip
//! 25% free collects every superblock the moment 1/8 of it is stale, so every scheme's WAF is 8
//! (measured 8.00 from 80% on) and partial GC, which FEMU runs without that floor, takes
//! blocks with next to nothing stale (WAF 15.8); 004 reports neither, so its device was
//! emptier than that. Each file is laid out sequentially by its job in 256 KiB writes (big
//! requests), then the random phase writes `WARMUP_FILE_WRITES` times the files' size before
//! the measured window of `MEASURED_FILE_WRITES` times more: WAF is the window's. Each job
//! draws its offsets as FIO does (`fio::FioFile`: its random map by default).
//!
//! The device is 004's FEMU as far as its fork's code shows (`DeviceModel`): 16 KiB pages
//! mapped whole, so a 4 KiB write programs a page, and WAF counted in pages as FEMU counts it
//! (`waf`; `ssd_waf` is flash bytes over host bytes); every scheme keeps FEMU's 18 (PLAN: 19)
//! superblocks open from the start whether it writes them or not. Files start on 1 MiB
//! boundaries, as partitions do.
//!
//! Multi-stream tags each job's writes with its own stream (004: "by the issuing process") and
//! the aging writes with stream 0. The predictor's clock is the host-write clock with a unit of
//! 1/1024 of the logical capacity: 004's unit is the second, and a second of 004's FIO writes
//! is of that order on its 240 GiB device.
use flashemu::rng::SplitMix64;
use flashemu::{
    Config, Counters, EmuError, Placement, PlanConfig, PlanGcTrigger, PlanMapUnit, Ssd, StoreKind,
};
use serde::Serialize;

use super::Scale;

mod fio;

use fio::FioFile;

/// File size ratio of the four FIO jobs (004 sec. 4, after AutoStream).
pub const FILE_RATIO: [u64; 4] = [1, 10, 30, 64];
/// Default aging: cold data and the four files as fractions of the logical space.
pub const COLD_FRACTION: f64 = 0.2;
pub const FILES_FRACTION: f64 = 0.5;
/// Aging and file layout request size: 64 LBAs = 256 KiB, 16 flash pages (a big request).
const LAYOUT_BLOCKS: u64 = 64;
/// Files start on 1 MiB boundaries (256 LBAs), as partitions do.
const FILE_ALIGN_BLOCKS: u64 = 256;
const WARMUP_FILE_WRITES: f64 = 2.0;
const MEASURED_FILE_WRITES: f64 = 2.0;
/// Predictor time unit as a fraction of the logical capacity in host writes.
const TIME_UNIT_DIVISOR: u64 = 1024;
/// Figure 1: chips per channel per superblock (of 8): full, 1/2, 1/4, 1/8 parallelism.
pub const FIGURE1_CHIPS: [u32; 4] = [8, 4, 2, 1];
/// Host commands in flight for Figure 1's throughput: 4 jobs at iodepth 32 (004 sec. 4).
const QUEUE_DEPTH: u32 = 128;
/// Chip latencies of 004's FEMU fork (bbssd/ftl.h): read 40 us, program 200 us, erase 2 ms,
/// and no channel transfer time (its `ch_xfer_lat` is 0).
const FEMU_TIMING: [(&str, &str); 4] = [
    ("timing.read-ns", "40000"),
    ("timing.program-ns", "200000"),
    ("timing.erase-ns", "2000000"),
    ("timing.transfer-ns", "0"),
];
const SEED: u64 = 0x0000_4F10;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("scheme {scheme}: {source}")]
    Emulator { scheme: String, source: EmuError },
    #[error("scheme {scheme}: {source}")]
    Config { scheme: String, source: flashemu::ConfigError },
    #[error("fill: {0}")]
    Fill(String),
}

/// One scheme of 004 sec. 4: its name as 004 writes it and the `plan.*` settings.
#[derive(Debug, Clone, Copy)]
pub struct SchemeSpec {
    pub name: &'static str,
    pub scheme: &'static str,
    pub small_chips_per_channel: u32,
    /// Every superblock, GC's too, this many chips a channel wide; 0: the scheme's widths.
    pub all_chips_per_channel: u32,
    /// Further `plan.*` settings (key, value) beyond 004's defaults.
    pub settings: &'static [(&'static str, &'static str)],
}

const fn spec(name: &'static str, scheme: &'static str, small: u32, all: u32) -> SchemeSpec {
    SchemeSpec {
        name,
        scheme,
        small_chips_per_channel: small,
        all_chips_per_channel: all,
        settings: &[],
    }
}

/// Weight of the old history in the long-history predictor variant: each chunk's lifetime
/// is then a mean over about its last ten writes instead of mostly its last one.
pub const LONG_HISTORY_WEIGHT: &str = "0.9";

/// Not 004's schemes: references for its predictor, at the fill of the run. The
/// job-separation bounds put each job's data in its own superblocks (multi-stream: the job is
/// all there is to know of a uniform file's lifetimes) with every superblock, GC's too, 1/4 or
/// 1/8 wide (PLAN keeps GC's full width). PLAN-Oracle is PLAN with the job as its class, a
/// perfect job classifier; the long-history variant is 004's predictor keeping most of each
/// chunk's past intervals (weight 0.9 instead of 0.1), a per-chunk mean deathtime.
pub const REFERENCES: [SchemeSpec; 4] = [
    spec("job-separation bound, all 1/4", "multi-stream", 2, 2),
    spec("job-separation bound, all 1/8", "multi-stream", 1, 1),
    spec("PLAN-Oracle-1/4", "plan-oracle", 2, 0),
    SchemeSpec {
        settings: &[("plan.history-weight", LONG_HISTORY_WEIGHT)],
        ..spec("PLAN-Pred-1/4, long history", "plan-pred", 2, 0)
    },
];

pub const SCHEMES: [SchemeSpec; 8] = [
    spec("plain", "plain", 2, 0),
    spec("partial GC", "partial-gc", 2, 0),
    spec("multi-stream", "multi-stream", 2, 0),
    spec("AutoStream", "autostream", 2, 0),
    spec("PLAN-NoPred-1/4", "plan-nopred", 2, 0),
    spec("PLAN-NoPred-1/8", "plan-nopred", 1, 0),
    spec("PLAN-Pred-1/4", "plan-pred", 2, 0),
    spec("PLAN-Pred-1/8", "plan-pred", 1, 0),
];

/// What of 004's FEMU the device models beyond its FTL (see `PlanConfig`): the map unit, the
/// streams whose superblocks are open from the start, and whether the geometry is 004 Table 1
/// itself instead of the scale's.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DeviceModel {
    pub map_unit: PlanMapUnit,
    pub device_streams: u32,
    /// 004 Table 1 unscaled: 8 channels x 8 chips x 1024 blocks x 256 pages of 16 KiB
    /// (256 GiB; superblocks of 004's size in pages). Ignores the scale's geometry.
    pub table1_geometry: bool,
}

impl Default for DeviceModel {
    /// 004's FEMU: pages mapped whole, 16 streams; the scale's geometry.
    fn default() -> DeviceModel {
        let plan = PlanConfig::default();
        DeviceModel {
            map_unit: plan.map_unit,
            device_streams: plan.device_streams,
            table1_geometry: false,
        }
    }
}

/// 004 Table 1 on the `plan` preset (which has its 8 chips a channel, 1024 blocks a chip,
/// 16 KiB pages and OP 0.0625 already).
const TABLE1_GEOMETRY: [(&str, &str); 2] = [("channels", "8"), ("pages-per-block", "256")];

#[derive(Debug, Clone, Serialize)]
pub struct SchemeResult {
    pub name: String,
    /// WAF of the measured window as 004's FEMU counts it: flash pages programmed over pages
    /// programmed for the host.
    pub waf: f64,
    /// Flash bytes over host bytes: above `waf` by what sub-page writes rewrite.
    pub ssd_waf: f64,
    pub host_write_bytes: u64,
    pub gc_copied_blocks: u64,
    pub block_erases: u64,
    /// Mean valid fraction of the window's GC victims.
    pub victim_valid_mean: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParallelismResult {
    pub chips_per_channel: u32,
    pub parallelism: String,
    /// As `SchemeResult::waf` and `ssd_waf`.
    pub waf: f64,
    pub ssd_waf: f64,
    /// Device-time throughput of the measured window, reads and writes, MB/s.
    pub throughput_mb_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    pub experiment: &'static str,
    pub scale: &'static str,
    pub device: String,
    pub logical_bytes: u64,
    /// `per-chip` (004's FEMU) or `on-demand`.
    pub gc_trigger: &'static str,
    pub model: DeviceModel,
    pub fill: Fill,
    /// FIO's random map (every block once a pass) or independent draws.
    pub random_map: bool,
    pub time_unit_host_writes: u64,
    pub schemes: Vec<SchemeResult>,
    /// `REFERENCES`: not 004's schemes; job-separation bounds and predictors at this fill.
    pub references: Vec<SchemeResult>,
    pub figure1: Vec<ParallelismResult>,
    /// Map unit and fill swept for Figure 1's width effect (None: not run).
    pub sweep: Option<Sweep>,
}

/// The `plan` preset at the scale: tiny for tests (256 MiB), demo 2 GiB, small 4 GiB, full
/// the preset's 8 GiB.
pub fn device_config(
    scale: Scale,
    trigger: PlanGcTrigger,
    model: DeviceModel,
) -> Result<Config, flashemu::ConfigError> {
    let mut config = Config::preset("plan")?;
    config.store = StoreKind::None;
    let overrides: &[(&str, &str)] = match scale {
        _ if model.table1_geometry => &TABLE1_GEOMETRY,
        Scale::Tiny => &[("channels", "2"), ("blocks-per-chip", "512"), ("pages-per-block", "2")],
        Scale::Demo => &[("pages-per-block", "4")],
        Scale::Small => &[("pages-per-block", "8")],
        Scale::Full => &[],
    };
    for (key, value) in overrides {
        config.set(key, value)?;
    }
    let unit = (config.layout().logical_blocks / TIME_UNIT_DIVISOR).max(1);
    config.set("plan.time-unit", &unit.to_string())?;
    config.set("plan.gc-trigger", trigger.name())?;
    config.set("plan.map-unit", model.map_unit.name())?;
    config.set("plan.device-streams", &model.device_streams.to_string())?;
    config.validate()?;
    Ok(config)
}

fn scheme_config(base: &Config, spec: &SchemeSpec) -> Result<Config, flashemu::ConfigError> {
    let mut config = base.clone();
    config.set("plan.scheme", spec.scheme)?;
    config.set("plan.small-chips-per-channel", &spec.small_chips_per_channel.to_string())?;
    if spec.all_chips_per_channel > 0 {
        config.set("plan.big-chips-per-channel", &spec.all_chips_per_channel.to_string())?;
    }
    if spec.scheme == "multi-stream" || spec.scheme == "plan-oracle" {
        // Stream 0 for the aging writes, one per job.
        config.set("streams", &(FILE_RATIO.len() + 1).to_string())?;
    }
    for (key, value) in spec.settings {
        config.set(key, value)?;
    }
    config.validate()?;
    Ok(config)
}

/// Figure 1's device: the plain scheme (one open host superblock, greedy by superblock) with
/// every superblock, GC's too, `chips` per channel wide, as 004's FEMU sets its default
/// width; same GC trigger as the schemes; timed by the chip model with FEMU's latencies at
/// 004's queue depth.
fn parallelism_config(base: &Config, chips: u32) -> Result<Config, flashemu::ConfigError> {
    let mut config = base.clone();
    config.set("plan.scheme", "plain")?;
    config.set("plan.big-chips-per-channel", &chips.to_string())?;
    config.set("plan.small-chips-per-channel", &chips.to_string())?;
    config.set("timing", "chips")?;
    config.set("queue-depth", &QUEUE_DEPTH.to_string())?;
    for (key, value) in FEMU_TIMING {
        config.set(key, value)?;
    }
    config.validate()?;
    Ok(config)
}

/// The four files: (first LBA, blocks) after the cold data.
fn files(logical_blocks: u64, fill: &Fill) -> Vec<(u64, u64)> {
    let total: u64 = FILE_RATIO.iter().sum();
    let files_blocks = (logical_blocks as f64 * fill.files_fraction) as u64;
    let align = |lba: u64| lba.div_ceil(FILE_ALIGN_BLOCKS) * FILE_ALIGN_BLOCKS;
    let mut start = align((logical_blocks as f64 * fill.cold_fraction) as u64);
    FILE_RATIO
        .iter()
        .map(|&share| {
            let blocks = (files_blocks * share / total).max(1);
            let file = (start, blocks);
            start = align(start + blocks);
            file
        })
        .collect()
}

/// Ages the device: cold data (stream 0), then each file laid out by its job.
fn age(ssd: &mut Ssd, files: &[(u64, u64)]) -> Result<(), EmuError> {
    let cold_end = files.first().map_or(0, |f| f.0);
    write_sequential(ssd, 0, cold_end, Placement::Stream(0))?;
    for (job, &(start, blocks)) in files.iter().enumerate() {
        write_sequential(ssd, start, start + blocks, Placement::Stream(job as u16 + 1))?;
    }
    Ok(())
}

fn write_sequential(
    ssd: &mut Ssd,
    from: u64,
    to: u64,
    placement: Placement,
) -> Result<(), EmuError> {
    let mut lba = from;
    // Bound: (to - from) / LAYOUT_BLOCKS requests.
    while lba < to {
        let blocks = LAYOUT_BLOCKS.min(to - lba);
        ssd.write(lba, blocks as u32, None, placement)?;
        lba += blocks;
    }
    Ok(())
}

/// The random phase: `writes` host writes and as many reads, jobs drawn at equal rates, each
/// job's offsets as FIO draws them (`FioFile`).
fn fio_mix(
    ssd: &mut Ssd,
    files: &mut [FioFile],
    writes: u64,
    rng: &mut SplitMix64,
) -> Result<(), EmuError> {
    let mut buf = [0u8; flashemu::LBA_BYTES as usize];
    let mut done = 0u64;
    // Bound: each step is a read or a write; writes are half of them on average, and the
    // step cap keeps a pathological RNG from looping forever.
    for _ in 0..writes.saturating_mul(8) {
        if done >= writes {
            break;
        }
        let job = rng.below(files.len() as u64) as usize;
        let read = rng.below(2) == 0;
        let lba = files[job].next_lba(rng);
        if read {
            ssd.read(lba, &mut buf)?;
        } else {
            ssd.write(lba, 1, None, Placement::Stream(job as u16 + 1))?;
            done += 1;
        }
    }
    Ok(())
}

/// Ages a fresh device, warms it up and returns the measured window's counters and device
/// throughput (MB/s, 0 without timing).
fn run_mix(config: Config, mix: &FioMix) -> Result<(Counters, f64), EmuError> {
    let mut ssd = Ssd::new(config)?;
    let files = files(ssd.logical_blocks(), &mix.fill);
    age(&mut ssd, &files)?;
    let file_blocks: u64 = files.iter().map(|f| f.1).sum();
    let mut jobs: Vec<FioFile> =
        files.iter().map(|&(start, blocks)| FioFile::new(start, blocks, mix.random_map)).collect();
    let mut rng = SplitMix64::new(SEED);
    let warmup = (file_blocks as f64 * WARMUP_FILE_WRITES) as u64;
    fio_mix(&mut ssd, &mut jobs, warmup, &mut rng)?;
    let before = ssd.counters();
    ssd.restart_timing_window();
    let measured = (file_blocks as f64 * MEASURED_FILE_WRITES) as u64;
    fio_mix(&mut ssd, &mut jobs, measured, &mut rng)?;
    let window = ssd.counters().since(&before);
    let throughput = ssd.timing_report().map_or(0.0, |t| t.bytes_per_s / 1e6);
    Ok((window, throughput))
}

/// One scheme on a fresh device of `base`: the measured window's figures.
fn run_scheme(base: &Config, spec: &SchemeSpec, mix: &FioMix) -> Result<SchemeResult, PlanError> {
    let config = scheme_config(base, spec)
        .map_err(|source| PlanError::Config { scheme: spec.name.into(), source })?;
    let (window, _) = run_mix(config, mix)
        .map_err(|source| PlanError::Emulator { scheme: spec.name.into(), source })?;
    Ok(SchemeResult {
        name: spec.name.to_string(),
        waf: window.programmed_waf().unwrap_or(0.0),
        ssd_waf: window.waf().unwrap_or(0.0),
        host_write_bytes: window.host_write_bytes,
        gc_copied_blocks: window.gc_copied_blocks,
        block_erases: window.block_erases,
        victim_valid_mean: window.victim_valid_mean(),
    })
}

/// How full the aged device is: cold data first, then the four files, as fractions of the
/// logical space (004 states neither).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Fill {
    pub cold_fraction: f64,
    pub files_fraction: f64,
}

impl Default for Fill {
    fn default() -> Fill {
        Fill { cold_fraction: COLD_FRACTION, files_fraction: FILES_FRACTION }
    }
}

impl Fill {
    /// Why the fill cannot be run, if it cannot.
    pub fn problem(&self) -> Option<String> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let total = self.cold_fraction + self.files_fraction;
        if !ok(self.cold_fraction) || !ok(self.files_fraction) || self.files_fraction <= 0.0 {
            return Some("fractions must be finite, >= 0, files > 0".into());
        }
        (total > 1.0).then(|| format!("cold + files = {total} exceeds the logical space"))
    }
}

/// The FIO mix's settings 004 leaves open or FIO decides: the aging fill, and whether the
/// jobs draw offsets with FIO's default random map (every block once a pass) or
/// independently (`norandommap`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FioMix {
    pub fill: Fill,
    pub random_map: bool,
}

impl Default for FioMix {
    fn default() -> FioMix {
        FioMix { fill: Fill::default(), random_map: true }
    }
}

/// Runs every scheme and Figure 1; `on_result` sees each line as it finishes.
pub fn run(
    scale: Scale,
    trigger: PlanGcTrigger,
    model: DeviceModel,
    mix: FioMix,
    on_result: &mut dyn FnMut(&str),
) -> Result<PlanReport, PlanError> {
    if let Some(reason) = mix.fill.problem() {
        return Err(PlanError::Fill(reason));
    }
    let config_error = |scheme: &str| {
        let scheme = scheme.to_string();
        move |source| PlanError::Config { scheme: scheme.clone(), source }
    };
    let base = device_config(scale, trigger, model).map_err(config_error("plan preset"))?;
    let mut schemes = Vec::with_capacity(SCHEMES.len());
    let mut references = Vec::with_capacity(REFERENCES.len());
    for (index, spec) in SCHEMES.iter().chain(&REFERENCES).enumerate() {
        let result = run_scheme(&base, spec, &mix)?;
        on_result(&format!("{}: WAF {:.3}", result.name, result.waf));
        if index < SCHEMES.len() {
            schemes.push(result)
        } else {
            references.push(result)
        }
    }
    let mut figure1 = Vec::with_capacity(FIGURE1_CHIPS.len());
    for chips in FIGURE1_CHIPS {
        let label = parallelism_label(chips, base.geometry.chips_per_channel);
        let config = parallelism_config(&base, chips).map_err(config_error(&label))?;
        let (window, throughput_mb_s) = run_mix(config, &mix)
            .map_err(|source| PlanError::Emulator { scheme: label.clone(), source })?;
        let waf = window.programmed_waf().unwrap_or(0.0);
        on_result(&format!("Figure 1, {label}: WAF {waf:.3}, {throughput_mb_s:.1} MB/s"));
        figure1.push(ParallelismResult {
            chips_per_channel: chips,
            parallelism: label,
            waf,
            ssd_waf: window.waf().unwrap_or(0.0),
            throughput_mb_s,
        });
    }
    Ok(PlanReport {
        experiment: "plan",
        scale: if model.table1_geometry { "table1" } else { scale.name() },
        device: device_label(&base),
        logical_bytes: base.layout().logical_blocks * flashemu::LBA_BYTES,
        gc_trigger: trigger.name(),
        model,
        fill: mix.fill,
        random_map: mix.random_map,
        time_unit_host_writes: base.plan.map_or(0, |p| p.time_unit),
        schemes,
        references,
        figure1,
        sweep: None,
    })
}

/// Map units and fills the sweep tries: the four files take `FILES_FRACTION` of the logical
/// space and cold data the rest of each fill, up to just short of the eager regime (from
/// about 75% valid every scheme collects each superblock once 1/8 of it is stale).
pub const SWEEP_MAP_UNITS: [PlanMapUnit; 2] = [PlanMapUnit::Slot, PlanMapUnit::Page];
pub const SWEEP_COLD_FRACTIONS: [f64; 5] = [0.0, 0.1, 0.2, 0.22, 0.24];

/// Figure 1's width effect and PLAN-Pred-1/4 at one map unit and fill.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    pub map_unit: PlanMapUnit,
    pub fill: Fill,
    /// Plain scheme, full-width superblocks and every superblock 1/8 wide.
    pub full_waf: f64,
    pub eighth_waf: f64,
    /// full_waf / eighth_waf: 004 Figure 1 shows 2.3.
    pub width_effect: f64,
    pub pred_quarter_waf: f64,
}

/// The sweep and, at its largest width effect, every reference scheme.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub points: Vec<SweepPoint>,
    /// Index into `points` of the largest width effect.
    pub largest: usize,
    /// `REFERENCES` at that setting.
    pub references_there: Vec<SchemeResult>,
}

/// One setting of the sweep: plain at full and 1/8 width, and PLAN-Pred-1/4.
fn sweep_point(
    scale: Scale,
    trigger: PlanGcTrigger,
    model: DeviceModel,
    mix: &FioMix,
) -> Result<SweepPoint, PlanError> {
    let base = device_config(scale, trigger, model)
        .map_err(|source| PlanError::Config { scheme: "plan preset".into(), source })?;
    let eighth = base.geometry.chips_per_channel / 8;
    let full = run_scheme(&base, &SCHEMES[0], mix)?;
    let narrow =
        run_scheme(&base, &spec("plain, all 1/8", "plain", eighth.max(1), eighth.max(1)), mix)?;
    let pred = run_scheme(&base, &SCHEMES[6], mix)?;
    Ok(SweepPoint {
        map_unit: model.map_unit,
        fill: mix.fill,
        full_waf: full.waf,
        eighth_waf: narrow.waf,
        width_effect: if narrow.waf > 0.0 { full.waf / narrow.waf } else { 0.0 },
        pred_quarter_waf: pred.waf,
    })
}

/// Sweeps `SWEEP_MAP_UNITS` x `SWEEP_COLD_FRACTIONS` for Figure 1's width effect, then runs
/// the reference schemes where it is largest; `on_result` sees each setting.
pub fn sweep(
    scale: Scale,
    trigger: PlanGcTrigger,
    model: DeviceModel,
    random_map: bool,
    on_result: &mut dyn FnMut(&str),
) -> Result<Sweep, PlanError> {
    let mut points = Vec::new();
    for map_unit in SWEEP_MAP_UNITS {
        for cold_fraction in SWEEP_COLD_FRACTIONS {
            let fill = Fill { cold_fraction, files_fraction: FILES_FRACTION };
            let mix = FioMix { fill, random_map };
            let point = sweep_point(scale, trigger, DeviceModel { map_unit, ..model }, &mix)?;
            on_result(&format!(
                "sweep (map unit, fill, WAF full, 1/8, ratio, PLAN-Pred-1/4) {}",
                sweep_row(&point)
            ));
            points.push(point);
        }
    }
    let largest = (0..points.len())
        .max_by(|&a, &b| points[a].width_effect.total_cmp(&points[b].width_effect))
        .unwrap_or(0);
    let mut references_there = Vec::new();
    if let Some(point) = points.get(largest) {
        let there = DeviceModel { map_unit: point.map_unit, ..model };
        let base = device_config(scale, trigger, there)
            .map_err(|source| PlanError::Config { scheme: "plan preset".into(), source })?;
        let mix = FioMix { fill: point.fill, random_map };
        for spec in &REFERENCES {
            references_there.push(run_scheme(&base, spec, &mix)?);
        }
    }
    Ok(Sweep { points, largest, references_there })
}

fn fill_percent(fill: &Fill) -> f64 {
    (fill.cold_fraction + fill.files_fraction) * 100.0
}

/// One setting as a markdown row (also the live line while the sweep runs).
fn sweep_row(p: &SweepPoint) -> String {
    format!(
        "| {} | {:.0}% | {:.3} | {:.3} | {:.2}x | {:+.0}% |",
        p.map_unit.name(),
        fill_percent(&p.fill),
        p.full_waf,
        p.eighth_waf,
        p.width_effect,
        change_percent(p.pred_quarter_waf, p.full_waf)
    )
}

fn change_percent(waf: f64, plain: f64) -> f64 {
    if plain > 0.0 {
        (waf / plain - 1.0) * 100.0
    } else {
        0.0
    }
}

/// The sweep as markdown: one row per setting, then the setting with the largest width
/// effect and what PLAN-Pred-1/4 and the references change there.
pub fn render_sweep(sweep: &Sweep) -> String {
    let mut out = String::from(
        "\n| map unit | fill (cold + files) | WAF full width | WAF 1/8 | full / 1/8 (004 Fig. 1: 2.3) | PLAN-Pred-1/4 vs plain (004 Fig. 3: -42%) |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for p in &sweep.points {
        out.push_str(&sweep_row(p));
        out.push('\n');
    }
    let Some(p) = sweep.points.get(sweep.largest) else {
        return out;
    };
    out.push_str(&format!(
        "\nLargest width effect: map unit {}, fill {:.0}%: full / 1/8 = {:.2}x (004: 2.3x); \
         PLAN-Pred-1/4 there {:+.1}% against plain (004: -42%).",
        p.map_unit.name(),
        fill_percent(&p.fill),
        p.width_effect,
        change_percent(p.pred_quarter_waf, p.full_waf)
    ));
    for r in &sweep.references_there {
        out.push_str(&format!(" {} {:+.1}%;", r.name, change_percent(r.waf, p.full_waf)));
    }
    out.push('\n');
    out
}

fn device_label(config: &Config) -> String {
    let g = config.geometry;
    format!(
        "{} channels x {} chips x {} blocks x {} pages of {} KiB, OP {}",
        g.channels,
        g.chips_per_channel,
        g.blocks_per_chip,
        g.pages_per_block,
        g.flash_page_bytes / 1024,
        config.op
    )
}

fn parallelism_label(chips: u32, chips_per_channel: u32) -> String {
    if chips == chips_per_channel {
        "full".into()
    } else {
        format!("1/{}", chips_per_channel / chips.max(1))
    }
}

/// The report as markdown: Figure 3's WAF per scheme (with the change from plain) and
/// Figure 1's rows.
pub fn render_markdown(report: &PlanReport) -> String {
    let mut out = format!(
        "004 FIO mix, scale {} ({}; {:.2} GiB logical); GC trigger {}; map unit {}, {} device \
         streams; aged with {:.0}% cold data and {:.0}% files; FIO random map {}\n\n\
         | scheme | WAF (pages) | vs plain | SSD WAF (bytes) | victims' valid |\n\
         |---|---:|---:|---:|---:|\n",
        report.scale,
        report.device,
        report.logical_bytes as f64 / (1u64 << 30) as f64,
        report.gc_trigger,
        report.model.map_unit.name(),
        report.model.device_streams,
        report.fill.cold_fraction * 100.0,
        report.fill.files_fraction * 100.0,
        if report.random_map { "on" } else { "off" }
    );
    let plain = report.schemes.first().map_or(0.0, |s| s.waf);
    let fill = fill_percent(&report.fill);
    for (index, s) in report.schemes.iter().chain(&report.references).enumerate() {
        let change = change_percent(s.waf, plain);
        let valid = s.victim_valid_mean.map_or("-".into(), |v| format!("{:.0}%", v * 100.0));
        // The references are not 004's schemes and hold at this fill only.
        let name = if index < report.schemes.len() {
            s.name.clone()
        } else {
            format!("*{} (not 004's; {fill:.0}% fill)*", s.name)
        };
        out.push_str(&format!(
            "| {name} | {:.3} | {change:+.0}% | {:.3} | {valid} |\n",
            s.waf, s.ssd_waf
        ));
    }
    out.push_str(
        "\n| parallelism (chips per channel) | WAF (pages) | SSD WAF (bytes) | throughput MB/s \
         |\n|---|---:|---:|---:|\n",
    );
    for f in &report.figure1 {
        out.push_str(&format!(
            "| {} ({}) | {:.3} | {:.3} | {:.1} |\n",
            f.parallelism, f.chips_per_channel, f.waf, f.ssd_waf, f.throughput_mb_s
        ));
    }
    if let Some(sweep) = &report.sweep {
        out.push_str(&render_sweep(sweep));
    }
    out
}

/// Figure 1 (WAF and throughput against parallelism) and Figure 3 (WAF per scheme) as
/// charts, through the one call into the plot module.
pub fn write_figures(
    report: &PlanReport,
    stem: &std::path::Path,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    use crate::plot::{BarChart, LineChart, Series};
    let svg = crate::plot::is_svg_path(stem);
    let named = |suffix: &str| super::figure_path(stem, suffix, svg);
    let points = |f: fn(&ParallelismResult) -> f64| {
        report.figure1.iter().map(|p| (f64::from(p.chips_per_channel), f(p))).collect()
    };
    let line = |title: &str, y: &str, series: Series| LineChart {
        title: title.into(),
        x_label: "chips per channel per superblock (8 = full parallelism)".into(),
        y_label: y.into(),
        series: vec![series],
        y_range: None,
        x_from_zero: true,
    };
    let bars = BarChart {
        title: format!("004 Fig. 3: WAF of the FIO mix ({} scale)", report.scale),
        y_label: "WAF".into(),
        // One group, one bar per scheme: the legend names them (eight names do not fit
        // under the axis).
        groups: vec!["FIO mix".into()],
        series_labels: report.schemes.iter().map(|s| s.name.clone()).collect(),
        values: vec![report.schemes.iter().map(|s| s.waf).collect()],
        stacked: false,
    };
    let charts = [
        (
            named("fig1-waf"),
            Chart::Line(line("004 Fig. 1: WAF", "WAF", Series::new("WAF", points(|p| p.waf)))),
        ),
        (
            named("fig1-throughput"),
            Chart::Line(line(
                "004 Fig. 1: throughput",
                "MB/s",
                Series::new("MB/s", points(|p| p.throughput_mb_s)),
            )),
        ),
        (named("fig3-waf"), Chart::Bars(bars)),
    ];
    let mut paths = Vec::with_capacity(charts.len());
    for (path, chart) in &charts {
        std::fs::write(path, render(chart, svg)?)?;
        paths.push(path.clone());
    }
    Ok(paths)
}

enum Chart {
    Line(crate::plot::LineChart),
    Bars(crate::plot::BarChart),
}

/// The only place this module calls the plot module.
fn render(chart: &Chart, svg: bool) -> std::io::Result<Vec<u8>> {
    let chart = match chart {
        Chart::Line(c) => crate::plot::Chart::Line(c.clone()),
        Chart::Bars(c) => crate::plot::Chart::Bar(c.clone()),
    };
    super::render_chart(chart, svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_run_reports_every_scheme_and_figure1() {
        let mut lines = Vec::new();
        let model = DeviceModel::default();
        let report =
            run(Scale::Tiny, PlanGcTrigger::PerChip, model, FioMix::default(), &mut |line| {
                lines.push(line.to_string())
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = report.schemes.iter().map(|s| s.name.as_str()).collect();
        let expected: Vec<&str> = SCHEMES.iter().map(|s| s.name).collect();
        assert_eq!(names, expected);
        assert!(report.schemes.iter().all(|s| s.waf > 1.0 && s.gc_copied_blocks > 0));
        assert_eq!(lines.len(), SCHEMES.len() + REFERENCES.len() + FIGURE1_CHIPS.len());
        assert_eq!(report.references.len(), REFERENCES.len());
        // 004 Figure 1's trend, as this emulator measures it at this scale: the narrowest
        // superblocks (1/8) copy less than full-width ones on the FIO mix.
        let waf_of = |chips: u32| {
            report.figure1.iter().find(|p| p.chips_per_channel == chips).map(|p| p.waf)
        };
        let (full, eighth) = (waf_of(8).unwrap_or(0.0), waf_of(1).unwrap_or(f64::MAX));
        assert!(eighth < full, "WAF at 1/8 {eighth} is not below full {full}");
        assert!(report.figure1.iter().all(|p| p.throughput_mb_s > 0.0));
        let json: serde_json::Value =
            serde_json::to_value(&report).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["schemes"][6]["name"], "PLAN-Pred-1/4");
        assert!(json["schemes"][6]["waf"].as_f64().is_some());
        let markdown = render_markdown(&report);
        assert!(expected.iter().all(|name| markdown.contains(name)));
        let stem = std::env::temp_dir().join(format!("wafer-plan-test-{}", std::process::id()));
        let paths = write_figures(&report, &stem).unwrap_or_else(|e| panic!("{e}"));
        for path in &paths {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&bytes[1..4], b"PNG");
            let _ = std::fs::remove_file(path);
        }
    }
}
