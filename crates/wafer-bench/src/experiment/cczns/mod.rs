//! 002 (CCZNS) on the emulator: host LZ4 / host ZSTD / device compression / none, YCSB load
//! and A with Table III's value sizes (Amazon- and Reddit-like): flash write volume (002
//! Figure 8), host CPU seconds and throughput with the device timing model.
//!
//! What is measured: the Wafer engine out of place on the emulated ZNS SSD (driver.rs), one
//! engine option apart between schemes (`compression` none / lz4 / zstd / device). Write
//! volume is what the flash programmed for the engine's page write-backs, GC copies (none at
//! these fills: the device is far from full) and metadata; 002's Figure 8 is RocksDB's
//! (flushes and compaction), so compare ratios between schemes, not bytes.
//!
//! Throughput: the driver is one thread; its host CPU time and the device time the timing
//! model gives (chips mode, queue depth 1, 002's TLC latencies; the engine at 002's 11/14 GB/s)
//! are taken to overlap (an engine with background write-back builds the next batch while the
//! device writes the last), so a phase's throughput is its operations over the larger of the
//! two.
pub mod cpu;
pub mod driver;
pub mod records;

use flashemu::{Config, Counters, StoreKind};
use serde::Serialize;

use super::Scale;
use crate::dist::{Rng, ScrambledZipfian, YCSB_ZIPFIAN_CONSTANT};
use driver::{Driver, DriverError, Scheme, SCHEMES};
use records::{Dataset, TextValues, DATASETS};

const SEED: u64 = 0x0000_0C02;

/// What every run's output says about the layer it measured.
pub const LAYER_NOTE: &str = "Measured layer: the Wafer engine out of place on the emulated ZNS \
SSD (a ZonedVolume: metadata on a conventional device in memory), one B-tree, a buffer pool of \
an eighth of the loaded value bytes, no WAL, one thread. Schemes differ in the engine's \
`compression` only: host LZ4 / ZSTD level 1 per 4 KiB page, packed; or `device`, pages handed \
raw to the SSD in compressed writes (chunks on 32-byte units) and read back with decompressed \
reads. Flash writes include the metadata device's.";

/// Buffer pool: this share of the values a scale loads (002: a block cache that holds a
/// fraction of the data), at least 1 MiB.
const POOL_SHARE_OF_VALUES: f64 = 0.125;

/// Records loaded and YCSB-A operations after the load, per scale.
pub fn sizes(scale: Scale) -> (u64, u64) {
    match scale {
        Scale::Tiny => (20_000, 20_000),
        Scale::Demo => (200_000, 100_000),
        Scale::Small => (500_000, 250_000),
        Scale::Full => (2_000_000, 500_000),
    }
}

/// The zoned device every scheme runs on: the `zns` preset (4 GiB, 16 MiB zones, 16 KiB
/// pages) with chip timing at queue depth 1; CW/DR enabled for the device scheme, chunks
/// placed on the engine map's 32-byte unit.
pub fn device_config(scheme: Scheme) -> Result<Config, flashemu::ConfigError> {
    let mut config = Config::preset("zns")?;
    config.store = StoreKind::Memory;
    config.set("timing", "chips")?;
    if scheme == Scheme::Device {
        config.set("cczns", "on")?;
        config.set("cczns.chunk_align_bytes", "32")?;
    }
    config.validate()?;
    Ok(config)
}

#[derive(Debug, thiserror::Error)]
pub enum CcznsError {
    #[error("{dataset}/{scheme}: {source}")]
    Driver { dataset: &'static str, scheme: &'static str, source: DriverError },
    #[error("device config: {0}")]
    Config(#[from] flashemu::ConfigError),
}

/// One phase (load or A) of one scheme.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub ops: u64,
    pub host_cpu_seconds: f64,
    pub device_seconds: f64,
    pub ops_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SchemeRun {
    pub name: &'static str,
    /// Bytes the flash programmed (pages, padding) plus the metadata device's writes.
    pub flash_write_bytes: u64,
    pub flash_pad_bytes: u64,
    /// Writes to the metadata device (superblock, map snapshots and journal), in the above.
    pub metadata_bytes: u64,
    /// Raw 4 KiB page bytes the engine handed its store (write-backs), before compression.
    pub page_bytes: u64,
    pub host_cpu_seconds: f64,
    /// The part of host CPU the engine spent in LZ4 / ZSTD (its codec counters).
    pub codec_cpu_seconds: f64,
    /// CPU the emulator itself took (its ZSTD for the device scheme included): not host time.
    pub emulator_cpu_seconds: f64,
    pub load: Phase,
    pub a: Phase,
    pub verified_reads: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DatasetRun {
    pub name: &'static str,
    pub table_iii_mean_bytes: f64,
    pub generated_mean_bytes: f64,
    pub schemes: Vec<SchemeRun>,
}

/// Totals over both datasets, one per scheme (the JSON's `schemes`).
#[derive(Debug, Clone, Serialize)]
pub struct SchemeTotal {
    pub name: &'static str,
    pub flash_write_bytes: u64,
    pub host_cpu_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CcznsReport {
    pub scale: &'static str,
    pub layer: &'static str,
    pub records: u64,
    pub a_operations: u64,
    pub schemes: Vec<SchemeTotal>,
    pub datasets: Vec<DatasetRun>,
}

/// Runs every dataset and scheme at `scale`; `on_line` hears one line per finished run.
pub fn run(scale: Scale, on_line: &mut dyn FnMut(&str)) -> Result<CcznsReport, CcznsError> {
    let (records, ops) = sizes(scale);
    run_sized(scale.name(), records, ops, on_line)
}

/// `run` with explicit sizes (tests run smaller than the tiny scale).
fn run_sized(
    scale: &'static str,
    records: u64,
    ops: u64,
    on_line: &mut dyn FnMut(&str),
) -> Result<CcznsReport, CcznsError> {
    let mut datasets = Vec::new();
    for dataset in DATASETS {
        let mut schemes = Vec::new();
        let mut mean = 0.0;
        for scheme in SCHEMES {
            let wrap = |source| CcznsError::Driver {
                dataset: dataset.name,
                scheme: scheme.name(),
                source,
            };
            let config = device_config(scheme)?;
            let (result, generated_mean) =
                run_one(scheme, config, &dataset, records, ops).map_err(wrap)?;
            mean = generated_mean;
            on_line(&format!(
                "{}/{}: {:.1} MiB flash, host CPU {:.2} s, load {:.0} ops/s, A {:.0} ops/s",
                dataset.name,
                scheme.name(),
                result.flash_write_bytes as f64 / (1u64 << 20) as f64,
                result.host_cpu_seconds,
                result.load.ops_per_s,
                result.a.ops_per_s
            ));
            schemes.push(result);
        }
        datasets.push(DatasetRun {
            name: dataset.name,
            table_iii_mean_bytes: dataset.mean_bytes,
            generated_mean_bytes: mean,
            schemes,
        });
    }
    let schemes = SCHEMES
        .iter()
        .enumerate()
        .map(|(i, s)| SchemeTotal {
            name: s.name(),
            flash_write_bytes: datasets.iter().map(|d| d.schemes[i].flash_write_bytes).sum(),
            host_cpu_seconds: datasets.iter().map(|d| d.schemes[i].host_cpu_seconds).sum(),
        })
        .collect();
    Ok(CcznsReport { scale, layer: LAYER_NOTE, records, a_operations: ops, schemes, datasets })
}

/// Load then YCSB-A (50% reads, 50% updates, scrambled zipfian 0.99) on one fresh device.
fn run_one(
    scheme: Scheme,
    config: Config,
    dataset: &Dataset,
    records: u64,
    ops: u64,
) -> Result<(SchemeRun, f64), DriverError> {
    let pool = ((records as f64 * dataset.mean_bytes * POOL_SHARE_OF_VALUES) as u64).max(1 << 20);
    let mut driver = Driver::new(scheme, config, records, TextValues::new(SEED), pool)?;
    let mut rng = Rng::new(SEED ^ records);
    let mut value_bytes = 0u64;
    let load = phase(&mut driver, records, |d| {
        for key in 0..records {
            let len = dataset.size_at(rng.next_f64());
            value_bytes += u64::from(len);
            d.put(key, len)?;
        }
        d.flush()
    })?;
    let keys = ScrambledZipfian::new(records, YCSB_ZIPFIAN_CONSTANT);
    let a = phase(&mut driver, ops, |d| {
        for _ in 0..ops {
            let key = keys.next(&mut rng);
            if rng.next_f64() < 0.5 {
                d.get(key)?;
            } else {
                d.put(key, dataset.size_at(rng.next_f64()))?;
            }
        }
        d.flush()
    })?;
    let counters: Counters = driver.ssd_counters();
    let metadata_bytes = driver.metadata_bytes();
    let (page_bytes, codec_cpu_seconds) = driver.engine_figures();
    let run = SchemeRun {
        name: scheme.name(),
        flash_write_bytes: counters.flash_bytes() + metadata_bytes,
        flash_pad_bytes: counters.flash_pad_bytes,
        metadata_bytes,
        page_bytes,
        host_cpu_seconds: driver.cpu.host_seconds(),
        codec_cpu_seconds,
        emulator_cpu_seconds: driver.cpu.emulator_seconds(),
        load,
        a,
        verified_reads: driver.verified_reads,
    };
    Ok((run, value_bytes as f64 / records.max(1) as f64))
}

/// Runs `body` as one measured phase: host CPU and device time from here to its end.
fn phase(
    driver: &mut Driver,
    ops: u64,
    body: impl FnOnce(&mut Driver) -> Result<(), DriverError>,
) -> Result<Phase, DriverError> {
    driver.restart_timing_window();
    let host_before = driver.cpu.host_seconds();
    body(driver)?;
    let host_cpu_seconds = driver.cpu.host_seconds() - host_before;
    let device_seconds = driver.timing_report().map_or(0.0, |t| t.device_ns as f64 / 1e9);
    let bound = host_cpu_seconds.max(device_seconds);
    let ops_per_s = if bound > 0.0 { ops as f64 / bound } else { 0.0 };
    Ok(Phase { ops, host_cpu_seconds, device_seconds, ops_per_s })
}

/// 002 Figure 8 in its own words (averages over its three datasets).
pub const PAPER_FIGURE8: &str = "002 (Fig. 8, YCSB Load, average of Amazon, Reddit and random \
data on RocksDB): device compression (CC) writes 44.5% less than none (NO); host ZSTD writes \
8.8% less than CC; CC's host CPU is on par with NO (Table IV).";

/// The report as markdown: per dataset, each scheme's write volume (and its change from none
/// and from host ZSTD), host CPU and throughput.
pub fn render_markdown(report: &CcznsReport) -> String {
    let mut out = format!(
        "002 CCZNS: {} records loaded, {} YCSB-A operations, scale {}\n\n{}\n\n",
        report.records, report.a_operations, report.scale, report.layer
    );
    for d in &report.datasets {
        out.push_str(&format!(
            "### {} (Table III mean {:.1} B, generated {:.1} B)\n\n| scheme | flash writes MiB | vs none | vs zstd | flash/page bytes | host CPU s | codec s | load ops/s | A ops/s | load device s | reads checked |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            d.name, d.table_iii_mean_bytes, d.generated_mean_bytes
        ));
        let bytes_of = |name: &str| {
            d.schemes.iter().find(|s| s.name == name).map_or(0, |s| s.flash_write_bytes)
        };
        let (none, zstd) = (bytes_of("none") as f64, bytes_of("zstd") as f64);
        for s in &d.schemes {
            let flash = s.flash_write_bytes as f64;
            out.push_str(&format!(
                "| {} | {:.1} | {:+.1}% | {:+.1}% | {:.3} | {:.2} | {:.2} | {:.0} | {:.0} | {:.2} | {} |\n",
                s.name,
                flash / (1u64 << 20) as f64,
                (flash / none - 1.0) * 100.0,
                (flash / zstd - 1.0) * 100.0,
                flash / s.page_bytes.max(1) as f64,
                s.host_cpu_seconds,
                s.codec_cpu_seconds,
                s.load.ops_per_s,
                s.a.ops_per_s,
                s.load.device_seconds,
                s.verified_reads
            ));
        }
        out.push('\n');
    }
    out.push_str(PAPER_FIGURE8);
    out.push('\n');
    out
}

/// Write volume (002 Figure 8), host CPU and load throughput as bar charts, datasets grouped.
pub fn write_figures(
    report: &CcznsReport,
    stem: &std::path::Path,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    use crate::plot::{BarChart, Chart};
    let svg = crate::plot::is_svg_path(stem);
    let bars = |title: &str, y: &str, f: fn(&SchemeRun) -> f64| BarChart {
        title: format!("{title} ({} scale)", report.scale),
        y_label: y.into(),
        groups: report.datasets.iter().map(|d| d.name.to_string()).collect(),
        series_labels: SCHEMES.iter().map(|s| s.name().to_string()).collect(),
        values: report.datasets.iter().map(|d| d.schemes.iter().map(f).collect()).collect(),
        stacked: false,
    };
    let charts = [
        (
            "write-volume",
            bars("002 Fig. 8: flash write volume", "MiB", |s| {
                s.flash_write_bytes as f64 / (1u64 << 20) as f64
            }),
        ),
        ("host-cpu", bars("Host CPU, load + A", "CPU seconds", |s| s.host_cpu_seconds)),
        ("throughput", bars("Load throughput (timing model)", "ops/s", |s| s.load.ops_per_s)),
    ];
    let mut paths = Vec::new();
    for (suffix, chart) in charts {
        let path = super::figure_path(stem, suffix, svg);
        std::fs::write(&path, super::render_chart(Chart::Bar(chart), svg)?)?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3000 records and 3000 operations per dataset and scheme through the engine: every read
    /// checked, device compression writes within 10% of host ZSTD (002: within 10%) and far
    /// below none, with no host codec time.
    #[test]
    fn small_run_shows_002s_shape() {
        let report = run_sized("test", 3000, 3000, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        for d in &report.datasets {
            let get = |name: &str| {
                d.schemes.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name}"))
            };
            let (none, lz4, zstd, device) = (get("none"), get("lz4"), get("zstd"), get("device"));
            assert!(d.schemes.iter().all(|s| s.verified_reads > 1000 && s.page_bytes > 0));
            assert!(
                zstd.flash_write_bytes < lz4.flash_write_bytes
                    && lz4.flash_write_bytes < none.flash_write_bytes
            );
            let gap = device.flash_write_bytes as f64 / zstd.flash_write_bytes as f64;
            assert!((0.9..1.1).contains(&gap), "{}: device/zstd {gap}", d.name);
            let saved = device.flash_write_bytes as f64 / none.flash_write_bytes as f64;
            assert!(saved < 0.7, "{}: device/none {saved}", d.name);
            assert_eq!((none.codec_cpu_seconds, device.codec_cpu_seconds), (0.0, 0.0));
            assert!(zstd.codec_cpu_seconds > 0.0 && device.load.device_seconds > 0.0);
        }
        let json = serde_json::to_value(&report).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = (0..4).filter_map(|i| json["schemes"][i]["name"].as_str()).collect();
        assert_eq!(names, ["none", "lz4", "zstd", "device"]);
        assert!(json["schemes"][3]["flash_write_bytes"].as_u64().is_some_and(|b| b > 0));
        assert!(json["schemes"][3]["host_cpu_seconds"].as_f64().is_some());
        assert!(render_markdown(&report).contains("| device |"));
    }
}
