//! Why an inference failed: a leaf, so the options, the devices and the sweep all return it.
use wafer::device::DeviceError;

#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error("invalid inference options: {0}")]
    Options(String),
    #[error("opening the device: {0}")]
    Open(#[source] DeviceError),
    #[error("zone size {zone_bytes} bytes: {source}")]
    Pattern { zone_bytes: u64, source: DeviceError },
    #[error(
        "the device's {capacity_bytes} bytes hold fewer than {zones_min} zones of the smallest \
         candidate size ({min_zone_bytes} bytes) at fill {fill}"
    )]
    TooSmall { capacity_bytes: u64, zones_min: u32, min_zone_bytes: u64, fill: f64 },
}
