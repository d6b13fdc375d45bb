//! Results of an emulator run (fio-like jobs or a trace replay): the JSON document, the text
//! table and the WAF chart. The numbers come straight from flashemu's counters.
//!
//! Top-level `host_bytes`, `flash_bytes`, `waf` and `erases` cover the measured phase (the jobs
//! or the trace, after the fill); `counters` are the device's raw totals, fill included.
pub mod sampler;
pub mod table;

use flashemu::{Config, Counters, Geometry, Interface, Ssd, LBA_BYTES};
use serde::Serialize;

pub use sampler::{Phase, Sample, Sampler};

use wafer_plot::{LineChart, Series};

/// The device as the run saw it.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceSummary {
    pub logical_blocks: u64,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub op: f64,
    pub gc_policy: String,
    pub interface: String,
    pub geometry: Geometry,
    pub config: Config,
}

impl DeviceSummary {
    pub fn of(ssd: &Ssd) -> DeviceSummary {
        let config = ssd.config().clone();
        let logical_blocks = ssd.logical_blocks();
        let interface = match config.interface {
            Interface::Conventional { streams } => {
                format!("conventional ({streams} stream{})", if streams == 1 { "" } else { "s" })
            }
            Interface::Fdp { ruh_count, .. } => format!("fdp ({ruh_count} handles)"),
            Interface::Zns { .. } => "zns".to_string(),
        };
        let interface = match &config.plan {
            Some(plan) => format!(
                "{interface}, PLAN {} (small superblocks {}/{} chips per channel)",
                plan.scheme.name(),
                plan.small_chips_per_channel,
                config.geometry.chips_per_channel
            ),
            None => interface,
        };
        let gc_policy = serde_json::to_value(config.gc.policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", config.gc.policy));
        DeviceSummary {
            logical_blocks,
            logical_bytes: logical_blocks * LBA_BYTES,
            physical_bytes: ssd.physical_bytes(),
            op: config.op,
            gc_policy,
            interface,
            geometry: config.geometry,
            config,
        }
    }
}

/// Host and flash totals of one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PhaseTotals {
    pub host_bytes: u64,
    pub flash_bytes: u64,
    pub waf: Option<f64>,
    pub erases: u64,
}

impl PhaseTotals {
    pub fn between(before: &Counters, after: &Counters) -> PhaseTotals {
        let host_bytes = after.host_write_bytes - before.host_write_bytes;
        let flash_bytes = after.flash_bytes() - before.flash_bytes();
        PhaseTotals {
            host_bytes,
            flash_bytes,
            waf: sampler::ratio(flash_bytes, host_bytes),
            erases: after.block_erases - before.block_erases,
        }
    }
}

/// What one job did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobTotals {
    pub name: String,
    pub workload: String,
    pub dist: String,
    pub bs_bytes: u64,
    pub region_start_bytes: u64,
    pub region_bytes: u64,
    pub placement: String,
    pub write_ios: u64,
    pub read_ios: u64,
    pub trim_ios: u64,
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub trim_bytes: u64,
}

/// The whole result, serialised as the `--json` document.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `jobs` or `replay`.
    pub kind: String,
    pub device: DeviceSummary,
    /// Host write bytes of the measured phase.
    pub host_bytes: u64,
    /// Flash bytes programmed in the measured phase (host + GC + padding).
    pub flash_bytes: u64,
    pub flash_host_bytes: u64,
    pub flash_gc_bytes: u64,
    pub flash_pad_bytes: u64,
    /// flash_bytes / host_bytes of the measured phase.
    pub waf: Option<f64>,
    /// flash / host over the last logical capacity of host writes of the measured phase; `None`
    /// if it wrote less than one capacity.
    pub steady_state_waf: Option<f64>,
    /// Block erases in the measured phase.
    pub erases: u64,
    pub superblock_erases: u64,
    pub gc_victims: u64,
    /// Mean valid ratio of the GC victims of the measured phase.
    pub gc_victim_mean_valid_ratio: Option<f64>,
    pub host_read_bytes: u64,
    pub host_trim_bytes: u64,
    pub fill_fraction: f64,
    pub fill: PhaseTotals,
    pub seed: u64,
    /// Host bytes the stop condition asked for (issued by the jobs); 0 for a replay.
    pub until_bytes: u64,
    pub sample_every_bytes: u64,
    pub jobs: Vec<JobTotals>,
    /// Raw device counters at the end (since the device was built).
    pub counters: Counters,
    pub samples: Vec<Sample>,
    pub wall_seconds: f64,
    /// 4 KiB host block writes simulated per wall-clock second (fill and measured phase).
    pub sim_host_writes_per_second: f64,
    /// A replay's address footprint against the device (None for jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceFootprint>,
}

/// Where a trace's addresses lie against the device it was replayed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct TraceFootprint {
    /// Requests (reads, writes, trims) that reached beyond the device, folded into range.
    pub folded_requests: u64,
    pub requests: u64,
    /// One past the highest byte any request touched, before folding.
    pub end_bytes: u64,
    pub device_bytes: u64,
}

impl TraceFootprint {
    /// The trace's address span over the device's capacity (above 1: it was folded).
    pub fn span_ratio(&self) -> f64 {
        self.end_bytes as f64 / self.device_bytes.max(1) as f64
    }
}

/// Inputs to [`RunReport::build`] beyond the device and the samples.
#[derive(Debug, Clone)]
pub struct ReportInputs {
    pub kind: &'static str,
    pub fill_fraction: f64,
    pub seed: u64,
    pub until_bytes: u64,
    pub jobs: Vec<JobTotals>,
    /// Counters when the device was built, after the fill, at the end.
    pub at_start: Counters,
    pub after_fill: Counters,
    pub at_end: Counters,
    pub wall_seconds: f64,
}

impl RunReport {
    pub fn build(ssd: &Ssd, sampler: Sampler, inputs: ReportInputs) -> RunReport {
        let device = DeviceSummary::of(ssd);
        let (fill_end, end) = (&inputs.after_fill, &inputs.at_end);
        let measured = PhaseTotals::between(fill_end, end);
        let victim_hist: Vec<u64> = end
            .victim_valid_hist
            .iter()
            .zip(fill_end.victim_valid_hist.iter())
            .map(|(a, b)| a - b)
            .collect();
        let host_blocks = (end.host_write_bytes - inputs.at_start.host_write_bytes) / LBA_BYTES;
        let sample_every_bytes = sampler.every_bytes();
        let samples = sampler.into_samples();
        let steady_state_waf =
            sampler::steady_state_waf(&samples, device.logical_bytes, fill_end.host_write_bytes);
        RunReport {
            kind: inputs.kind.to_string(),
            host_bytes: measured.host_bytes,
            flash_bytes: measured.flash_bytes,
            flash_host_bytes: end.flash_host_bytes - fill_end.flash_host_bytes,
            flash_gc_bytes: end.flash_gc_bytes - fill_end.flash_gc_bytes,
            flash_pad_bytes: end.flash_pad_bytes - fill_end.flash_pad_bytes,
            waf: measured.waf,
            steady_state_waf,
            erases: measured.erases,
            superblock_erases: end.superblock_erases - fill_end.superblock_erases,
            gc_victims: end.gc_victims - fill_end.gc_victims,
            gc_victim_mean_valid_ratio: sampler::mean_valid_ratio(&victim_hist),
            host_read_bytes: end.host_read_bytes - fill_end.host_read_bytes,
            host_trim_bytes: end.host_trim_bytes - fill_end.host_trim_bytes,
            fill_fraction: inputs.fill_fraction,
            fill: PhaseTotals::between(&inputs.at_start, fill_end),
            seed: inputs.seed,
            until_bytes: inputs.until_bytes,
            sample_every_bytes,
            jobs: inputs.jobs,
            counters: end.clone(),
            samples,
            wall_seconds: inputs.wall_seconds,
            sim_host_writes_per_second: if inputs.wall_seconds > 0.0 {
                host_blocks as f64 / inputs.wall_seconds
            } else {
                0.0
            },
            device,
            trace: None,
        }
    }

    pub fn to_json(&self) -> String {
        // Every field is a plain number, string or option: serialisation cannot fail, but stay
        // panic-free anyway.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// WAF (interval and cumulative) against host writes in units of the logical capacity.
    pub fn waf_chart(&self) -> LineChart {
        let capacity = self.device.logical_bytes.max(1) as f64;
        let points = |pick: fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
            self.samples
                .iter()
                .filter_map(|s| pick(s).map(|y| (s.host_write_bytes as f64 / capacity, y)))
                .collect()
        };
        let steady = self.steady_state_waf.map(|w| format!(", steady {w:.3}")).unwrap_or_default();
        // Samples count from a new device, so with a fill the cumulative line includes it.
        let cumulative_label =
            if self.fill.host_bytes > 0 { "cumulative WAF (incl. fill)" } else { "cumulative WAF" };
        LineChart {
            title: format!(
                "WAF: {} OP {:.0}% {}{steady}",
                self.device.interface,
                self.device.op * 100.0,
                self.device.gc_policy
            ),
            x_label: "host writes / logical capacity".to_string(),
            y_label: "WAF".to_string(),
            series: vec![
                Series::new("interval WAF", points(|s| s.interval_waf)),
                Series::new(cumulative_label, points(|s| s.cumulative_waf)),
            ],
            y_range: None,
            x_from_zero: true,
        }
    }
}
