//! Building the device a run drives: a preset or a TOML file, then `key=value` overrides, all
//! through flashemu's `Config` so every field can be overridden.
use std::path::Path;

use flashemu::{Config, StoreKind};

use super::error::JobError;

/// Where the base configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSource {
    Preset(String),
    TomlFile(std::path::PathBuf),
}

/// Resolves the configuration: base, then each `key=value` override in order, then validation.
pub fn resolve_config(source: &DeviceSource, overrides: &[String]) -> Result<Config, JobError> {
    let mut config = match source {
        DeviceSource::Preset(name) => Config::preset(name)?,
        DeviceSource::TomlFile(path) => {
            let text = read_text(path)?;
            Config::from_toml(&text).map_err(|e| JobError::JobFile {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?
        }
    };
    for assignment in overrides {
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            JobError::spec(format!("--set `{assignment}`: expected key=value (example: op=0.28)"))
        })?;
        config.set(key.trim(), value.trim())?;
    }
    config.validate()?;
    Ok(config)
}

/// The job runner passes no data (metadata-only writes), so it never needs a data store: drop
/// it, which keeps a multi-GiB device from costing memory or disk.
pub fn for_simulation(mut config: Config) -> Config {
    config.store = StoreKind::None;
    config
}

/// The configuration as a TOML document (`wafer emu show`).
pub fn to_toml(config: &Config) -> Result<String, JobError> {
    toml::to_string(config).map_err(|e| JobError::spec(format!("cannot print configuration: {e}")))
}

fn read_text(path: &Path) -> Result<String, JobError> {
    std::fs::read_to_string(path)
        .map_err(|source| JobError::Io { path: path.display().to_string(), source })
}
