//! Which emulated device a `wafer emu` command runs on: the arguments the job commands and the
//! server share, and the configuration they resolve to. A leaf, so neither command names the
//! other for them.
use std::path::{Path, PathBuf};

use clap::Args;
use flashemu::Config;
use wafer_bench::jobs::{self, DeviceSource};

use super::error::CliError;

/// Which device: a preset or a TOML file, then overrides (typed shortcuts first, then --set).
#[derive(Debug, Args)]
pub(super) struct DeviceArgs {
    /// Device preset: cns, fdp, zns, tiny [default: cns].
    #[arg(long, conflicts_with = "config")]
    preset: Option<String>,
    /// Device configuration file (TOML; may name a base with `preset = "cns"`).
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    /// Override any configuration field, e.g. --set op=0.28 --set geometry.channels=4.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Over-provisioning, (physical - logical) / logical.
    #[arg(long)]
    op: Option<String>,
    /// GC victim policy: greedy, cost-benefit, fifo, random-d.
    #[arg(long, value_name = "POLICY")]
    gc_policy: Option<String>,
    /// Interface: conventional, fdp, zns.
    #[arg(long)]
    interface: Option<String>,
    /// Open streams of a conventional device (each job writes to its own).
    #[arg(long)]
    streams: Option<String>,
    /// Time the device by 001's MQSSD model: costs of this profile (from `wafer profile
    /// --out`) at k = timing.queue-depth (--set queue-depth=8). Chip timing: --set timing=chips.
    #[arg(long, value_name = "PROFILE.toml")]
    mqssd_profile: Option<PathBuf>,
}

impl DeviceArgs {
    /// What the device is, as given: preset or file, then the overrides.
    pub(super) fn label(&self) -> String {
        let mut label = match (&self.preset, &self.config) {
            (_, Some(path)) => path.display().to_string(),
            (Some(name), None) => name.clone(),
            (None, None) => "cns".to_string(),
        };
        for over in self.overrides() {
            label.push(' ');
            label.push_str(&over);
        }
        label
    }

    /// The typed shortcuts as `key=value`, then every --set, in the order they apply.
    fn overrides(&self) -> Vec<String> {
        let shortcuts = [
            ("interface", &self.interface),
            ("op", &self.op),
            ("gc-policy", &self.gc_policy),
            ("streams", &self.streams),
        ];
        let mut overrides: Vec<String> = shortcuts
            .iter()
            .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key}={v}")))
            .collect();
        overrides.extend(self.set.iter().cloned());
        overrides
    }

    pub(super) fn config(&self) -> Result<Config, CliError> {
        let source = match (&self.preset, &self.config) {
            (_, Some(path)) => DeviceSource::TomlFile(path.clone()),
            (Some(name), None) => DeviceSource::Preset(name.clone()),
            (None, None) => DeviceSource::Preset("cns".to_string()),
        };
        let mut config = jobs::resolve_config(&source, &self.overrides())?;
        if let Some(path) = &self.mqssd_profile {
            apply_mqssd_profile(&mut config, path)?;
        }
        Ok(config)
    }
}

/// Sets MQSSD timing from a fitted profile's cost functions at the configured queue depth.
fn apply_mqssd_profile(config: &mut Config, path: &Path) -> Result<(), CliError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let profile = wafer_bench::mqssd::DeviceProfile::from_toml(&text)?;
    let costs = profile.costs_at(config.timing.queue_depth);
    const NS_PER_US: f64 = 1000.0;
    config.timing.mode = flashemu::TimingMode::Mqssd;
    config.timing.mqssd = flashemu::timing::MqssdCosts {
        s_ns: costs.s_us * NS_PER_US,
        beta_ns: costs.beta_us * NS_PER_US,
        t_ns: costs.t_us * NS_PER_US,
        alpha_ns: costs.alpha_us * NS_PER_US,
    };
    config.validate()?;
    Ok(())
}
