//! `key = value` overrides and TOML parsing.
//!
//! Keys are accepted flat (`gc-policy`, `channels`) or as dotted paths mirroring the TOML
//! structure (`gc.policy`, `geometry.channels`); `_` and `-` are interchangeable. Values are
//! strings as they come from a command line.
use std::path::PathBuf;

use crate::config::{
    CcznsConfig, Config, FdpIsolation, GcPolicy, Interface, PlanConfig, PlanGcTrigger, PlanMapUnit,
    PlanScheme, StoreKind,
};
use crate::error::ConfigError;

/// Zone limits used when `interface` is switched to ZNS by an override (the preset's values).
const ZNS_OPEN_ZONES_DEFAULT: u32 = 14;
const FDP_RUH_COUNT_DEFAULT: u32 = 8;
/// Nesting bound for TOML tables: the config is two levels deep.
const TOML_DEPTH_MAX: usize = 4;

impl Config {
    /// Parses a TOML document. With `preset = "cns"` the preset is the base and every other key
    /// (flat or in tables, e.g. `[geometry] channels = 4`) overrides it through [`Config::set`];
    /// without a preset the document must describe the whole config (as `to_toml` writes it).
    /// The result is validated.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        from_toml(text)
    }

    /// The whole config as a TOML document that `from_toml` reads back to an equal value.
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    /// Overrides one field by dotted or flat key, e.g. `op`, `gc-policy`, `geometry.channels`.
    /// Underscores and dashes are interchangeable. Does not validate the whole config (several
    /// keys may need to change together); call [`Config::validate`] after the last override.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        set(self, key, value)
    }
}

fn set(config: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    let normalized = key.trim().to_ascii_lowercase().replace('_', "-");
    let value = value.trim();
    let g = &mut config.geometry;
    match normalized.as_str() {
        "channels" | "geometry.channels" => g.channels = parse_u32("geometry.channels", value)?,
        "chips-per-channel" | "geometry.chips-per-channel" => {
            g.chips_per_channel = parse_u32("geometry.chips_per_channel", value)?;
        }
        "blocks-per-chip" | "geometry.blocks-per-chip" => {
            g.blocks_per_chip = parse_u32("geometry.blocks_per_chip", value)?;
        }
        "pages-per-block" | "geometry.pages-per-block" => {
            g.pages_per_block = parse_u32("geometry.pages_per_block", value)?;
        }
        "flash-page-bytes" | "flash-page-size" | "page-size" | "geometry.flash-page-bytes" => {
            g.flash_page_bytes = parse_u32("geometry.flash_page_bytes", value)?;
        }
        "superblock-chips-per-channel"
        | "sb-chips-per-channel"
        | "geometry.superblock-chips-per-channel" => {
            g.superblock_chips_per_channel =
                parse_u32("geometry.superblock_chips_per_channel", value)?;
        }
        "op" => {
            config.op =
                value.parse::<f64>().map_err(|e| invalid("op", format!("`{value}`: {e}")))?;
        }
        "gc-policy" | "gc.policy" => config.gc.policy = parse_policy(value)?,
        "gc-free-low"
        | "free-superblocks-low"
        | "gc-free-superblocks-low"
        | "gc.free-superblocks-low" => {
            config.gc.free_superblocks_low = parse_u32("gc.free_superblocks_low", value)?;
        }
        "gc-free-high"
        | "free-superblocks-high"
        | "gc-free-superblocks-high"
        | "gc.free-superblocks-high" => {
            config.gc.free_superblocks_high = parse_u32("gc.free_superblocks_high", value)?;
        }
        "random-d" | "gc-random-d" | "gc.random-d" => {
            config.gc.random_d = parse_u32("gc.random_d", value)?;
        }
        "interface" | "interface.kind" => set_interface_kind(config, value)?,
        "streams" | "interface.streams" => {
            let count = parse_u32("interface.streams", value)?;
            match &mut config.interface {
                Interface::Conventional { streams } => *streams = count,
                _ => return Err(not_for_interface("interface.streams", "conventional")),
            }
        }
        "ruh-count" | "ruhs" | "interface.ruh-count" => {
            let count = parse_u32("interface.ruh_count", value)?;
            match &mut config.interface {
                Interface::Fdp { ruh_count, .. } => *ruh_count = count,
                _ => return Err(not_for_interface("interface.ruh_count", "fdp")),
            }
        }
        "isolation" | "fdp-isolation" | "interface.isolation" => {
            let parsed = parse_isolation(value)?;
            match &mut config.interface {
                Interface::Fdp { isolation, .. } => *isolation = parsed,
                _ => return Err(not_for_interface("interface.isolation", "fdp")),
            }
        }
        "zone-capacity-blocks" | "interface.zone-capacity-blocks" => {
            let parsed = parse_u64("interface.zone_capacity_blocks", value)?;
            match &mut config.interface {
                Interface::Zns { zone_capacity_blocks, .. } => *zone_capacity_blocks = parsed,
                _ => return Err(not_for_interface("interface.zone_capacity_blocks", "zns")),
            }
        }
        "max-open-zones" | "interface.max-open-zones" => {
            let parsed = parse_u32("interface.max_open_zones", value)?;
            match &mut config.interface {
                Interface::Zns { max_open_zones, .. } => *max_open_zones = parsed,
                _ => return Err(not_for_interface("interface.max_open_zones", "zns")),
            }
        }
        "max-active-zones" | "interface.max-active-zones" => {
            let parsed = parse_u32("interface.max_active_zones", value)?;
            match &mut config.interface {
                Interface::Zns { max_active_zones, .. } => *max_active_zones = parsed,
                _ => return Err(not_for_interface("interface.max_active_zones", "zns")),
            }
        }
        "store" | "store.kind" => config.store = parse_store(value)?,
        "store-path" | "store.path" => {
            config.store = StoreKind::File(PathBuf::from(value));
        }
        "seed" => config.seed = parse_u64("seed", value)?,
        "timing" | "timing.mode" => config.timing.mode = parse_timing_mode(value)?,
        "timing.read-ns" | "read-ns" => config.timing.read_ns = parse_u64("timing.read_ns", value)?,
        "timing.program-ns" | "program-ns" => {
            config.timing.program_ns = parse_u64("timing.program_ns", value)?;
        }
        "timing.erase-ns" | "erase-ns" => {
            config.timing.erase_ns = parse_u64("timing.erase_ns", value)?;
        }
        "timing.transfer-ns" | "transfer-ns" => {
            config.timing.transfer_ns = parse_u64("timing.transfer_ns", value)?;
        }
        "timing.queue-depth" | "queue-depth" | "qd" => {
            config.timing.queue_depth = parse_u32("timing.queue_depth", value)?;
        }
        "timing.mqssd.s-ns" => config.timing.mqssd.s_ns = parse_f64("timing.mqssd.s_ns", value)?,
        "timing.mqssd.beta-ns" => {
            config.timing.mqssd.beta_ns = parse_f64("timing.mqssd.beta_ns", value)?;
        }
        "timing.mqssd.t-ns" => config.timing.mqssd.t_ns = parse_f64("timing.mqssd.t_ns", value)?,
        "timing.mqssd.alpha-ns" => {
            config.timing.mqssd.alpha_ns = parse_f64("timing.mqssd.alpha_ns", value)?;
        }
        other if other.starts_with("plan") => set_plan(config, other, value)?,
        other if other.starts_with("cczns") => set_cczns(config, other, value)?,
        _ => return Err(ConfigError::UnknownKey(key.to_string())),
    }
    Ok(())
}

/// `cczns = on|off` turns the compression commands on or off; any other `cczns.*` key turns
/// them on with defaults and sets its field.
fn set_cczns(config: &mut Config, normalized: &str, value: &str) -> Result<(), ConfigError> {
    let key = normalized.trim_start_matches("cczns").trim_start_matches(['.', '-']);
    if key.is_empty() || key == "enabled" {
        config.cczns = match value.to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => Some(config.cczns.unwrap_or_default()),
            "off" | "false" | "0" | "none" => None,
            _ => return Err(invalid("cczns", format!("`{value}` is not on or off"))),
        };
        return Ok(());
    }
    let cczns = config.cczns.get_or_insert_with(CcznsConfig::default);
    match key {
        "zstd-level" => {
            cczns.zstd_level = value
                .trim()
                .parse()
                .map_err(|_| invalid("cczns.zstd_level", format!("`{value}` is not an integer")))?;
        }
        "oob-bytes-per-block" => {
            cczns.oob_bytes_per_block = parse_u32("cczns.oob_bytes_per_block", value)?;
        }
        "compress-bytes-per-s" => {
            cczns.compress_bytes_per_s = parse_f64("cczns.compress_bytes_per_s", value)?;
        }
        "decompress-bytes-per-s" => {
            cczns.decompress_bytes_per_s = parse_f64("cczns.decompress_bytes_per_s", value)?;
        }
        "compress-latency-ns" => {
            cczns.compress_latency_ns = parse_u64("cczns.compress_latency_ns", value)?;
        }
        "decompress-latency-ns" => {
            cczns.decompress_latency_ns = parse_u64("cczns.decompress_latency_ns", value)?;
        }
        "chunk-align-bytes" => {
            cczns.chunk_align_bytes = parse_u32("cczns.chunk_align_bytes", value)?;
        }
        _ => return Err(ConfigError::UnknownKey(normalized.to_string())),
    }
    Ok(())
}

/// `plan.scheme` turns PLAN on (`none` turns it off); the other `plan.*` keys need it on.
fn set_plan(config: &mut Config, normalized: &str, value: &str) -> Result<(), ConfigError> {
    let key = normalized.trim_start_matches("plan").trim_start_matches(['.', '-']);
    if key == "scheme" || key.is_empty() {
        if matches!(value.to_ascii_lowercase().as_str(), "none" | "off") {
            config.plan = None;
            return Ok(());
        }
        let scheme = PlanScheme::parse(value).ok_or_else(|| {
            let known: Vec<&str> = PlanScheme::ALL.iter().map(|s| s.name()).collect();
            invalid("plan.scheme", format!("`{value}` is not none or one of {}", known.join(", ")))
        })?;
        config.plan.get_or_insert_with(PlanConfig::default).scheme = scheme;
        return Ok(());
    }
    let Some(plan) = config.plan.as_mut() else {
        return Err(invalid("plan.scheme", format!("set it before `plan.{key}`")));
    };
    match key {
        "small-chips-per-channel" => {
            plan.small_chips_per_channel = parse_u32("plan.small_chips_per_channel", value)?;
        }
        "big-chips-per-channel" => {
            plan.big_chips_per_channel = parse_u32("plan.big_chips_per_channel", value)?;
        }
        "gc-trigger" => {
            plan.gc_trigger = PlanGcTrigger::parse(value).ok_or_else(|| {
                invalid("plan.gc_trigger", format!("`{value}` is not on-demand or per-chip"))
            })?;
        }
        "gc-background-free" => {
            plan.gc_background_free = parse_f64("plan.gc_background_free", value)?;
        }
        "gc-foreground-free" => {
            plan.gc_foreground_free = parse_f64("plan.gc_foreground_free", value)?;
        }
        "gc-background-min-invalid" => {
            plan.gc_background_min_invalid = parse_f64("plan.gc_background_min_invalid", value)?;
        }
        "big-request-pages" => {
            plan.big_request_pages = parse_u32("plan.big_request_pages", value)?;
        }
        "chunk-pages" => plan.chunk_pages = parse_u32("plan.chunk_pages", value)?,
        "lifetime-classes" => plan.lifetime_classes = parse_u32("plan.lifetime_classes", value)?,
        "history-weight" => plan.history_weight = parse_f64("plan.history_weight", value)?,
        "time-unit" => plan.time_unit = parse_u64("plan.time_unit", value)?,
        "autostream-streams" => {
            plan.autostream_streams = parse_u32("plan.autostream_streams", value)?;
        }
        "map-unit" => {
            plan.map_unit = PlanMapUnit::parse(value).ok_or_else(|| {
                invalid("plan.map_unit", format!("`{value}` is not slot or page"))
            })?;
        }
        "device-streams" => plan.device_streams = parse_u32("plan.device_streams", value)?,
        "autostream-decay-units" => {
            plan.autostream_decay_units = parse_u64("plan.autostream_decay_units", value)?;
        }
        _ => return Err(ConfigError::UnknownKey(normalized.to_string())),
    }
    Ok(())
}

fn from_toml(text: &str) -> Result<Config, ConfigError> {
    let table: toml::Table =
        text.parse().map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
    let config = match table.get("preset") {
        None => toml::from_str::<Config>(text).map_err(|e| ConfigError::Parse(e.to_string()))?,
        Some(toml::Value::String(name)) => {
            let mut config = Config::preset(name)?;
            let mut overrides = Vec::new();
            flatten("", &table, 0, &mut overrides)?;
            for (key, value) in &overrides {
                if key != "preset" {
                    set(&mut config, key, value)?;
                }
            }
            config
        }
        Some(other) => {
            return Err(ConfigError::Parse(format!("`preset` must be a string, not {other}")))
        }
    };
    config.validate()?;
    Ok(config)
}

/// Turns nested tables into dotted `key = value` pairs, `kind` first within each table so an
/// interface or store variant is chosen before its fields are set.
fn flatten(
    prefix: &str,
    table: &toml::Table,
    depth: usize,
    out: &mut Vec<(String, String)>,
) -> Result<(), ConfigError> {
    if depth > TOML_DEPTH_MAX {
        return Err(ConfigError::Parse(format!("tables nested deeper than {TOML_DEPTH_MAX}")));
    }
    let mut entries: Vec<(&String, &toml::Value)> = table.iter().collect();
    // `kind` and `scheme` first: the other keys of their table depend on them.
    entries.sort_by_key(|(key, _)| *key != "kind" && *key != "scheme");
    for (key, value) in entries {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Table(inner) => {
                flatten(&path, inner, depth + 1, out)?;
                continue;
            }
            other => {
                return Err(ConfigError::Parse(format!("`{path}` has unsupported value {other}")))
            }
        };
        out.push((path, text));
    }
    Ok(())
}

fn set_interface_kind(config: &mut Config, value: &str) -> Result<(), ConfigError> {
    let zone_blocks = u64::from(config.layout().slots_per_superblock);
    let superblocks = config.layout().superblock_count.max(1);
    config.interface = match (value.to_ascii_lowercase().as_str(), config.interface) {
        ("conventional" | "cns", current @ Interface::Conventional { .. }) => current,
        ("conventional" | "cns", _) => Interface::Conventional { streams: 1 },
        ("fdp", current @ Interface::Fdp { .. }) => current,
        ("fdp", _) => Interface::Fdp {
            ruh_count: FDP_RUH_COUNT_DEFAULT,
            isolation: FdpIsolation::InitiallyIsolated,
        },
        ("zns", current @ Interface::Zns { .. }) => current,
        ("zns", _) => Interface::Zns {
            zone_capacity_blocks: zone_blocks,
            max_open_zones: ZNS_OPEN_ZONES_DEFAULT.min(superblocks),
            max_active_zones: ZNS_OPEN_ZONES_DEFAULT.min(superblocks),
        },
        (other, _) => {
            return Err(invalid("interface", format!("`{other}` is not conventional, fdp or zns")))
        }
    };
    Ok(())
}

fn parse_policy(value: &str) -> Result<GcPolicy, ConfigError> {
    match value.to_ascii_lowercase().replace('_', "-").as_str() {
        "greedy" => Ok(GcPolicy::Greedy),
        "cost-benefit" | "costbenefit" | "cb" => Ok(GcPolicy::CostBenefit),
        "fifo" => Ok(GcPolicy::Fifo),
        "random-d" | "randomd" | "d-choices" | "random" => Ok(GcPolicy::RandomD),
        other => Err(invalid(
            "gc.policy",
            format!("`{other}` is not greedy, cost-benefit, fifo or random-d"),
        )),
    }
}

fn parse_isolation(value: &str) -> Result<FdpIsolation, ConfigError> {
    match value.to_ascii_lowercase().replace('_', "-").as_str() {
        "initially-isolated" | "initial" | "initially" => Ok(FdpIsolation::InitiallyIsolated),
        "persistently-isolated" | "persistent" | "persistently" => {
            Ok(FdpIsolation::PersistentlyIsolated)
        }
        other => Err(invalid(
            "interface.isolation",
            format!("`{other}` is not initially-isolated or persistently-isolated"),
        )),
    }
}

fn parse_store(value: &str) -> Result<StoreKind, ConfigError> {
    let lower = value.to_ascii_lowercase();
    if lower == "none" {
        Ok(StoreKind::None)
    } else if lower == "memory" || lower == "mem" {
        Ok(StoreKind::Memory)
    } else if lower == "file" {
        // The path follows as `store.path`; validate() rejects a file store without one.
        Ok(StoreKind::File(PathBuf::new()))
    } else if let Some(path) = value.strip_prefix("file:") {
        Ok(StoreKind::File(PathBuf::from(path)))
    } else {
        Err(invalid("store", format!("`{value}` is not none, memory or file:PATH")))
    }
}

/// Parses an integer, accepting `k`/`KiB` and `m`/`MiB` suffixes (binary multiples).
fn parse_u64(field: &'static str, value: &str) -> Result<u64, ConfigError> {
    let lower = value.to_ascii_lowercase().replace('_', "");
    let (digits, multiplier) =
        if let Some(d) = lower.strip_suffix("kib").or(lower.strip_suffix('k')) {
            (d, 1u64 << 10)
        } else if let Some(d) = lower.strip_suffix("mib").or(lower.strip_suffix('m')) {
            (d, 1u64 << 20)
        } else {
            (lower.as_str(), 1)
        };
    let number =
        digits.trim().parse::<u64>().map_err(|e| invalid(field, format!("`{value}`: {e}")))?;
    number.checked_mul(multiplier).ok_or_else(|| invalid(field, format!("`{value}` overflows")))
}

fn parse_u32(field: &'static str, value: &str) -> Result<u32, ConfigError> {
    let wide = parse_u64(field, value)?;
    u32::try_from(wide).map_err(|_| invalid(field, format!("`{value}` does not fit in 32 bits")))
}

fn invalid(field: &'static str, reason: String) -> ConfigError {
    ConfigError::Invalid { field, reason }
}

fn not_for_interface(field: &'static str, needed: &str) -> ConfigError {
    invalid(field, format!("only applies to a {needed} interface; set `interface` first"))
}

fn parse_f64(field: &'static str, value: &str) -> Result<f64, ConfigError> {
    value.parse::<f64>().map_err(|e| invalid(field, format!("`{value}`: {e}")))
}

fn parse_timing_mode(value: &str) -> Result<crate::timing::TimingMode, ConfigError> {
    use crate::timing::TimingMode;
    match value.to_ascii_lowercase().as_str() {
        "off" | "false" | "none" => Ok(TimingMode::Off),
        "chips" | "on" | "true" => Ok(TimingMode::Chips),
        "mqssd" => Ok(TimingMode::Mqssd),
        _ => Err(invalid("timing.mode", format!("`{value}` is not off, chips or mqssd"))),
    }
}
