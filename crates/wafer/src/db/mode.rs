//! Store selection by write mode. The superblock (page 0) sits at `data_offset_bytes` in both
//! modes, so its mode byte is read before any store is built: opening a database in the other
//! mode fails here with a clear error instead of misreading its pages.
use crate::buffer::{DoublewriteStore, InPlaceStore, PageStore};
use crate::device::{AlignedBuf, Device};
use crate::oop::OutOfPlaceStore;
use crate::options::{Options, WriteMode};
use crate::page::meta::Meta;
use crate::page::PAGE_SIZE;
use crate::{OptionsError, Result};
use std::sync::Arc;

/// The store for `options.write_mode`, and the doublewrite store when it is one (its counters
/// go to the stats). Out of place never doublewrites: an old page version stays valid until the
/// new one is durable, so `options.doublewrite` does not apply.
pub(super) type Stores = (Arc<dyn PageStore>, Option<Arc<DoublewriteStore>>);

/// `journal`: out of place, the map journal's slice of the log device (None: on `device`).
pub(super) fn open_store(
    device: Arc<dyn Device>,
    options: &Options,
    journal: Option<Arc<dyn Device>>,
) -> Result<Stores> {
    let offset = options.data_offset_bytes;
    if device.capacity_bytes() < offset + PAGE_SIZE as u64 {
        let capacity_bytes = device.capacity_bytes();
        return Err(OptionsError::SuperblockBeyondDevice { capacity_bytes, offset }.into());
    }
    if options.write_mode == WriteMode::OutOfPlace && !has_conventional_superblock(&*device) {
        // Before any read: a zone refuses reads past its write pointer.
        return Err(OptionsError::ZonedWithoutVolume.into());
    }
    if options.write_mode == WriteMode::InPlace && device.zoned().is_some() {
        return Err(OptionsError::ZonedInPlace.into());
    }
    let mut sb = AlignedBuf::zeroed(PAGE_SIZE);
    device.read_at(offset, &mut sb)?;
    if sb.iter().any(|b| *b != 0) {
        let mut page = [0u8; PAGE_SIZE];
        page.copy_from_slice(&sb);
        // A superblock that does not decode is reported by the caller with its reason.
        if let Ok(meta) = Meta::decode(&page) {
            check_mode(meta.write_mode, options.write_mode)?;
        }
    }
    let stores: Stores = match options.write_mode {
        WriteMode::InPlace if options.doublewrite => {
            let dw = Arc::new(DoublewriteStore::new(device, offset)?);
            (dw.clone(), Some(dw))
        }
        WriteMode::InPlace => (Arc::new(InPlaceStore::new(device, offset)), None),
        WriteMode::OutOfPlace => {
            let store = OutOfPlaceStore::open_growable(
                device,
                offset,
                options.out_of_place,
                journal,
                options.max_file_bytes,
            )?;
            (Arc::new(store), None)
        }
    };
    // Out of place never doublewrites (the stats count doublewritten pages by this).
    debug_assert!(stores.1.is_none() || options.write_mode == WriteMode::InPlace);
    Ok(stores)
}

/// Whether the superblock's block is conventional: always on a conventional device, on a
/// zoned one only in a leading conventional zone (a [`crate::device::ZonedVolume`]).
pub(super) fn has_conventional_superblock(device: &dyn Device) -> bool {
    // Conventional zones lead the device: never more of them than zones.
    debug_assert!(device.zoned().is_none_or(|z| z.conventional_zones() <= z.zone_count()));
    device.zoned().is_none_or(|z| z.conventional_zones() > 0)
}

fn check_mode(stored: u8, wanted: WriteMode) -> Result<()> {
    // The superblock holds the mode as its discriminant: the comparison below is meaningful
    // only if that byte decodes back to the mode it encodes.
    debug_assert_eq!(WriteMode::from_u8(wanted as u8), Some(wanted), "write mode encoding");
    match WriteMode::from_u8(stored) {
        Some(mode) if mode == wanted => Ok(()),
        Some(mode) => Err(OptionsError::WriteMode { stored: mode, wanted }.into()),
        None => Err(crate::Corruption::UnknownWriteMode { stored }.into()),
    }
}
