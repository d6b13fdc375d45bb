//! The Wafer rows on the raw device, as a comparison is configured with them, and the job a
//! row's worker is sent: a leaf, so the configuration names them without naming the sizing in
//! `raw` that reads the configuration.
use crate::error::PeerError;

/// Every raw row's engine options (Table 1's aligned NoWA row): out of place, LZ4 pages
/// packed into 4 KiB slots, grouping by deathtime over 16 open zones of 1/16 of the GC unit
/// each, NoWA compensating before the SSD's GC would copy.
pub const RAW_BASE: [&str; 6] = [
    "compression=lz4",
    "packing=true",
    "placement=gdt",
    "nowa=true",
    "open_zones=16",
    "zones_per_gc_unit=16",
];

/// The engine option a blob row adds (its value: [`PeersConfig::blob_threshold_bytes`](crate::PeersConfig::blob_threshold_bytes)).
pub const BLOB_THRESHOLD_OPTION: &str = "blob_threshold";
/// The page-id cap every blob engine of the comparison runs with: each blob page takes an id
/// of its own while LZ4 and packing store it in a fraction of a slot, so ids go past the zone
/// space (thin provisioning; a write that would not fit is refused with `OutOfSpace`).
pub const BLOB_ID_CAP_OPTION: &str = "max_fill_percent=250";

/// One Wafer row on the raw device: its name and the options it adds to [`RAW_BASE`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RawRow {
    pub name: String,
    pub engine: Vec<String>,
}

impl RawRow {
    /// The rows run by default: aligned NoWA with LZ4 and packing, and the same with values
    /// of at least the run's blob threshold out of line (page ids at 250% of the slots: the
    /// same records, each value an id of its own, its bytes packed several to a slot).
    pub fn defaults() -> Vec<RawRow> {
        vec![
            RawRow { name: "wafer-raw-nowa".into(), engine: Vec::new() },
            RawRow {
                name: "wafer-raw-blobs".into(),
                engine: vec![BLOB_THRESHOLD_OPTION.into(), BLOB_ID_CAP_OPTION.into()],
            },
        ]
    }

    /// `NAME` or `NAME:KEY=VALUE;KEY=VALUE`; `blob_threshold` without a value takes the run's
    /// blob threshold (so the Wafer and RocksDB blob rows share one figure).
    pub fn parse(text: &str) -> Result<RawRow, PeerError> {
        let (name, options) = text.split_once(':').unwrap_or((text, ""));
        let name = name.trim();
        if !name.starts_with("wafer-raw") || name.contains(char::is_whitespace) {
            return Err(PeerError::Config(format!(
                "raw row `{text}`: its name must start with wafer-raw (rows say which engine)"
            )));
        }
        let engine: Vec<String> =
            options.split(';').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect();
        if let Some(bad) =
            engine.iter().find(|o| !o.contains('=') && o.as_str() != BLOB_THRESHOLD_OPTION)
        {
            return Err(PeerError::Config(format!("raw row `{text}`: `{bad}` is not KEY=VALUE")));
        }
        Ok(RawRow { name: name.to_string(), engine })
    }

    /// The row's options after [`RAW_BASE`], a bare `blob_threshold` given its value.
    pub(crate) fn options(&self, blob_threshold_bytes: u32) -> Vec<String> {
        let extra = self.engine.iter().map(|o| match o.as_str() {
            BLOB_THRESHOLD_OPTION => format!("{BLOB_THRESHOLD_OPTION}={blob_threshold_bytes}"),
            _ => o.clone(),
        });
        RAW_BASE.iter().map(|s| s.to_string()).chain(extra).collect()
    }
}

/// What a raw row's worker opens: the two served files and the engine's options.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawJob {
    pub row: RawRow,
    pub data_path: std::path::PathBuf,
    pub wal_path: std::path::PathBuf,
    pub data_capacity_bytes: u64,
    pub wal_capacity_bytes: u64,
    /// Every engine option (`key=value`), device-derived ones included.
    pub engine: Vec<String>,
}
