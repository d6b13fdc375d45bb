//! 000 sec. 5.3 as one command: infer the SSD's GC unit with the ZNS-like pattern
//! ([`crate::gc_unit`]) on an emulator preset or a file / block device, and report WAF and
//! throughput per zone size, the inferred `gc_unit_bytes`, markdown and charts.
//!
//! On the emulator the scale caps the flash: blocks are halved (down to 4 pages) until the
//! flash fits 128 MiB (tiny), 512 MiB (demo) or 2 GiB (small); full is the preset. So the
//! superblock, the unit to infer, is the preset's width with shorter blocks, and the
//! superblock count (hence GC's reserve share) is the preset's. `--emu KEY=VALUE` overrides come after the scale. The emulator's timing model is on
//! (chips, 32 writes in flight), so MB/s is device time in which GC takes chip time from
//! host writes.
use std::path::PathBuf;

use flashemu::Config;
use serde::Serialize;
use wafer::device::FileOptions;

use super::Scale;
use crate::gc_unit::{self, InferError, InferOptions, InferTarget, Inference};
use crate::runner::setup::DeviceChoice;

/// Host writes in flight on the emulator's timing model: an engine's write-back keeps many
/// requests queued (000 uses io_uring); at depth 1 a write waits for its own program and the
/// chips GC keeps busy elsewhere cost it little, so the throughput knee would hide.
const QUEUE_DEPTH: u32 = 32;
/// Shortest block the scale will halve to (pages).
const SCALED_PAGES_MIN: u32 = 4;

#[derive(Debug, thiserror::Error)]
pub enum InferExperimentError {
    #[error("{0}")]
    Invalid(String),
    #[error("emulator configuration: {0}")]
    Config(#[from] flashemu::ConfigError),
    #[error("{0}")]
    Infer(#[from] InferError),
}

/// Where and how to run, as the command line gives it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `emu:PRESET`, `emu:FILE.toml` or `file:PATH`.
    pub device: String,
    pub scale: Scale,
    /// Emulator overrides (`flashemu::Config::set` keys), after the scale.
    pub emu: Vec<(String, String)>,
    /// Bytes of a file target the pattern uses (required for files).
    pub capacity_bytes: Option<u64>,
    /// O_DIRECT on a file target.
    pub direct: bool,
    /// A file target that exists with data (or a block device) is written over only with this.
    pub overwrite: bool,
}

/// The report: what ran, and the inference.
#[derive(Debug, Clone, Serialize)]
pub struct InferReport {
    pub experiment: &'static str,
    pub scale: &'static str,
    pub device: String,
    /// The emulator's geometry, or the file's path.
    pub device_detail: String,
    #[serde(flatten)]
    pub inference: Inference,
}

/// The sweep's options at a scale: sizes from 16 KiB (tiny), 256 KiB (demo), 1 MiB (small,
/// full); tiny measures one zone space of rewrites, the others two.
pub fn options_for(scale: Scale) -> InferOptions {
    match scale {
        Scale::Tiny => InferOptions::quick(),
        Scale::Demo => InferOptions { min_zone_bytes: 256 << 10, ..InferOptions::default() },
        Scale::Small | Scale::Full => InferOptions::default(),
    }
}

/// The target the request names.
pub fn target(request: &Request) -> Result<(InferTarget, String), InferExperimentError> {
    let choice = DeviceChoice::parse(&request.device)
        .map_err(|e| InferExperimentError::Invalid(e.to_string()))?;
    match choice {
        DeviceChoice::Emu(arg) => {
            let config = emulator_config(&arg, request)?;
            let detail = describe(&config);
            Ok((InferTarget::Emulator(Box::new(config)), detail))
        }
        DeviceChoice::File(path) => file_target(path, request),
        _ => Err(InferExperimentError::Invalid(format!(
            "device `{}`: infer-gc-unit runs on emu:PRESET, emu:FILE.toml or file:PATH",
            request.device
        ))),
    }
}

fn emulator_config(arg: &str, request: &Request) -> Result<Config, InferExperimentError> {
    let mut config = if arg.ends_with(".toml") {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| InferExperimentError::Invalid(format!("{arg}: {e}")))?;
        Config::from_toml(&text)?
    } else {
        Config::preset(arg)?
    };
    if matches!(config.interface, flashemu::Interface::Zns { .. }) {
        return Err(InferExperimentError::Invalid(format!(
            "emu:{arg} is a ZNS device: it reports its zones and has no device GC, so there \
             is nothing to infer (000 sec. 5.1 sizes DB zones as the device's zones)"
        )));
    }
    scale_flash(&mut config, request.scale);
    config.set("timing", "chips")?;
    config.set("queue-depth", &QUEUE_DEPTH.to_string())?;
    for (key, value) in &request.emu {
        config.set(key, value)?;
    }
    // The pattern never reads: no store, no memory for data.
    config.store = flashemu::StoreKind::None;
    config.validate()?;
    Ok(config)
}

/// The scale's cap on the flash (see the module doc): blocks are shortened, so the superblock
/// count, and with it the share GC reserves, stays the preset's.
fn scale_flash(config: &mut Config, scale: Scale) {
    let flash_max_bytes: u64 = match scale {
        Scale::Tiny => 128 << 20,
        Scale::Demo => 512 << 20,
        Scale::Small => 2 << 30,
        Scale::Full => return,
    };
    // Bound: pages halve at most 32 times.
    for _ in 0..32 {
        if config.layout().physical_slots * flashemu::LBA_BYTES <= flash_max_bytes
            || config.geometry.pages_per_block / 2 < SCALED_PAGES_MIN
        {
            break;
        }
        config.geometry.pages_per_block /= 2;
    }
}

fn describe(config: &Config) -> String {
    let g = config.geometry;
    let layout = config.layout();
    format!(
        "{} channels x {} chips x {} blocks x {} pages of {} KiB; {} superblocks of {} (one \
         block of {} chip(s) per channel); OP {}, GC {:?}",
        g.channels,
        g.chips_per_channel,
        g.blocks_per_chip,
        g.pages_per_block,
        g.flash_page_bytes / 1024,
        layout.superblock_count,
        bytes_text(layout.superblock_bytes()),
        g.superblock_chips_per_channel,
        config.op,
        config.gc.policy
    )
}

fn file_target(
    path: PathBuf,
    request: &Request,
) -> Result<(InferTarget, String), InferExperimentError> {
    let capacity_bytes = request.capacity_bytes.ok_or_else(|| {
        InferExperimentError::Invalid(
            "a file target needs --capacity SIZE (the bytes the pattern writes over)".into(),
        )
    })?;
    let meta = std::fs::metadata(&path).ok();
    let holds_data = meta.as_ref().is_some_and(|m| !m.is_file() || m.len() > 0);
    if holds_data && !request.overwrite {
        return Err(InferExperimentError::Invalid(format!(
            "{}: exists and holds data (or is a device); the pattern TRIMs and overwrites it \
             all: pass --overwrite to go ahead",
            path.display()
        )));
    }
    let file = if request.direct { FileOptions::DIRECT } else { FileOptions::BUFFERED };
    let detail = format!(
        "{} ({}, {})",
        path.display(),
        bytes_text(capacity_bytes),
        if request.direct { "O_DIRECT" } else { "buffered, synced at the end of each window" }
    );
    Ok((InferTarget::File { path, capacity_bytes, file }, detail))
}

/// Runs the sweep; `on_line` sees a line per zone size.
pub fn run(
    request: &Request,
    options: &InferOptions,
    on_line: &mut dyn FnMut(&str),
) -> Result<InferReport, InferExperimentError> {
    let (target, device_detail) = target(request)?;
    let inference = gc_unit::infer_gc_unit(&target, options, &mut |p| {
        let waf = p.waf.map_or("-".into(), |w| format!("{w:.3}"));
        on_line(&format!(
            "zone {}: SSD WAF {waf}, {:.1} MB/s",
            bytes_text(p.zone_bytes),
            p.write_mb_s
        ));
    })?;
    Ok(InferReport {
        experiment: "infer-gc-unit",
        scale: request.scale.name(),
        device: request.device.clone(),
        device_detail,
        inference,
    })
}

/// 4096 -> "4 KiB", 16 MiB -> "16 MiB".
pub fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while unit + 1 < UNITS.len() && value >= 1024 && value.is_multiple_of(1024) {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

/// The table per zone size and the answer, as markdown.
pub fn render_markdown(report: &InferReport) -> String {
    let inf = &report.inference;
    let o = &inf.options;
    let mut out = format!(
        "GC-unit inference (000 sec. 5.3), {} at scale {}: {}\n\nZNS-like pattern: zones fill \
         {:.0}% of {}, one active zone; zones picked at random are {}rewritten whole; {} zone \
         space(s) of rewrites warm up, {} measured. {}.\n\n| zone size | zones | SSD WAF | \
         GC copies per host byte | write MB/s |\n|---:|---:|---:|---:|---:|\n",
        report.device,
        report.scale,
        report.device_detail,
        o.fill * 100.0,
        crate::emu_report::table::human_bytes(inf.capacity_bytes),
        if o.trim { "TRIMmed and " } else { "" },
        o.warmup_writes,
        o.measured_writes,
        inf.method_note
    );
    for p in &inf.points {
        let waf = p.waf.map_or("-".into(), |w| format!("{w:.3}"));
        let copies = p
            .gc_copy_bytes
            .map_or("-".into(), |b| format!("{:.3}", b as f64 / p.host_write_bytes.max(1) as f64));
        out.push_str(&format!(
            "| {} | {} | {waf} | {copies} | {:.1} |\n",
            bytes_text(p.zone_bytes),
            p.zones,
            p.write_mb_s
        ));
    }
    let answer = |bytes: Option<u64>| bytes.map_or("none in the sweep".into(), bytes_text);
    out.push_str(&format!(
        "\nInferred GC unit: **{}** (by {}; WAF at most {} counts as 1, throughput within {:.0}% \
         of the best as no GC). Throughput knee: {}. The device reports: {}.\n",
        answer(inf.gc_unit_bytes),
        match inf.method {
            gc_unit::MetricSource::FlashCounters => "SSD WAF",
            gc_unit::MetricSource::Throughput => "the throughput knee",
        },
        1.0 + o.waf_tolerance,
        o.throughput_tolerance * 100.0,
        answer(inf.throughput_knee_bytes),
        inf.reported_gc_unit_bytes.map_or("nothing".into(), bytes_text)
    ));
    if inf.gc_unit_bytes.is_none() {
        out.push_str(&format!(
            "No size of the sweep reached the no-GC level: 000 recommends {} zones as a safe \
             upper bound.\n",
            bytes_text(gc_unit::SAFE_UPPER_BOUND_BYTES)
        ));
    }
    out
}

/// WAF and throughput against the zone size (x: log2 of the zone size in KiB).
pub fn write_figures(
    report: &InferReport,
    stem: &std::path::Path,
) -> std::io::Result<Vec<PathBuf>> {
    use crate::plot::{Chart, LineChart, Series};
    let svg = crate::plot::is_svg_path(stem);
    let x = |z: u64| ((z / 1024).max(1) as f64).log2();
    let points = &report.inference.points;
    let line = |title: &str, y: &str, pts: Vec<(f64, f64)>| {
        Chart::Line(LineChart {
            title: title.into(),
            x_label: "zone size, log2 KiB (10 = 1 MiB, 14 = 16 MiB, 20 = 1 GiB)".into(),
            y_label: y.into(),
            series: vec![Series::new(y, pts)],
            y_range: None,
            x_from_zero: false,
        })
    };
    let waf: Vec<(f64, f64)> =
        points.iter().filter_map(|p| Some((x(p.zone_bytes), p.waf?))).collect();
    let mb_s: Vec<(f64, f64)> = points.iter().map(|p| (x(p.zone_bytes), p.write_mb_s)).collect();
    let mut charts = vec![(
        "throughput",
        line("000 sec. 5.3: write throughput per zone size", "write MB/s", mb_s),
    )];
    if !waf.is_empty() {
        charts.insert(0, ("waf", line("000 sec. 5.3: SSD WAF per zone size", "SSD WAF", waf)));
    }
    let mut paths = Vec::with_capacity(charts.len());
    for (suffix, chart) in charts {
        let path = super::figure_path(stem, suffix, svg);
        std::fs::write(&path, super::render_chart(chart, svg)?)?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(device: &str, scale: Scale) -> Request {
        Request {
            device: device.into(),
            scale,
            emu: Vec::new(),
            capacity_bytes: None,
            direct: false,
            overwrite: false,
        }
    }

    #[test]
    fn scales_cap_the_flash_and_keep_the_superblock_width() {
        let config = |scale| match target(&request("emu:cns", scale)) {
            Ok((InferTarget::Emulator(c), _)) => *c,
            other => panic!("{other:?}"),
        };
        let demo = config(Scale::Demo);
        assert_eq!(demo.layout().physical_slots * 4096, 512 << 20);
        assert_eq!(demo.layout().superblock_bytes(), 2 << 20);
        assert_eq!((demo.geometry.channels, demo.layout().superblock_count), (8, 256));
        let full = config(Scale::Full);
        assert_eq!(full.layout().superblock_bytes(), 16 << 20);
        assert_eq!(full.layout().superblock_count, 256);
        assert!(full.timing.mode == flashemu::TimingMode::Chips);
        // The tiny preset already fits: unchanged at every scale.
        let tiny = match target(&request("emu:tiny", Scale::Demo)) {
            Ok((InferTarget::Emulator(c), _)) => *c,
            other => panic!("{other:?}"),
        };
        assert_eq!(tiny.geometry, Config::preset("tiny").unwrap().geometry);
    }

    #[test]
    fn bad_requests_are_errors() {
        let err = |r: Request| target(&r).map(|_| ()).unwrap_err().to_string();
        assert!(err(request("memory:1GiB", Scale::Demo)).contains("emu:PRESET"));
        assert!(err(request("emu:nope", Scale::Demo)).contains("nope"));
        assert!(err(request("emu:zns", Scale::Demo)).contains("nothing to infer"));
        assert!(err(request("file:/tmp/x", Scale::Demo)).contains("--capacity"));
        let mut bad_key = request("emu:cns", Scale::Demo);
        bad_key.emu.push(("no-such-key".into(), "1".into()));
        assert!(target(&bad_key).is_err());
        let exe = std::env::current_exe().unwrap();
        let mut used = request(&format!("file:{}", exe.display()), Scale::Demo);
        used.capacity_bytes = Some(1 << 20);
        assert!(err(used).contains("--overwrite"));
    }

    #[test]
    fn tiny_run_reports_the_superblock() {
        let mut r = request("emu:tiny", Scale::Tiny);
        r.emu.push(("op".into(), "0.25".into()));
        let mut lines = Vec::new();
        let report = run(&r, &options_for(Scale::Tiny), &mut |l| lines.push(l.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
        let superblock = Config::preset("tiny").unwrap().layout().superblock_bytes();
        assert_eq!(report.inference.gc_unit_bytes, Some(superblock));
        assert_eq!(lines.len(), report.inference.points.len());
        // Device time: GC below the unit costs throughput, so the knee agrees.
        assert_eq!(report.inference.throughput_knee_bytes, Some(superblock));
        let markdown = render_markdown(&report);
        assert!(markdown.contains("Inferred GC unit: **128 KiB**"), "{markdown}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["gc_unit_bytes"], superblock);
        assert!(json["points"][0]["waf"].as_f64().is_some_and(|w| w > 1.0));
        let stem = std::env::temp_dir().join(format!("wafer-infer-test-{}", std::process::id()));
        for path in write_figures(&report, &stem).unwrap() {
            assert_eq!(&std::fs::read(&path).unwrap()[1..4], b"PNG");
            let _ = std::fs::remove_file(path);
        }
    }

    #[test]
    fn byte_sizes_read_well() {
        assert_eq!(bytes_text(4096), "4 KiB");
        assert_eq!(bytes_text(16 << 20), "16 MiB");
        assert_eq!(bytes_text(3 << 30), "3 GiB");
        assert_eq!(bytes_text(1000), "1000 B");
    }
}
