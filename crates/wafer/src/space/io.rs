//! The space manager's own device I/O: resetting released zones, and writing / reading map
//! snapshots. Page I/O stays with the out-of-place store.
use super::snapshot::{self, MapSnapshot, BLOCK_BYTES};
use super::zone::ZoneId;
use super::Space;
use crate::device::{Device, DeviceError, WriteOp, WritePurpose, ZoneCondition, Zoned};

/// Prepares released zones for reuse: TRIM on a conventional device (tells the FTL the old
/// pages are garbage, so device GC need not copy them), zone reset on a zoned one (required
/// before appending again). On a zoned device space zones must be device zones. With the
/// artifact's `trim_off` a conventional device is told nothing: the SSD keeps the old pages
/// valid until they are overwritten, as under ZLeanStore's default.
pub fn reset_zones<D: Device + ?Sized>(
    device: &D,
    space: &Space,
    zones: &[ZoneId],
) -> Result<(), DeviceError> {
    let (zone_bytes, stride_bytes) =
        (space.options().zone_bytes, space.options().zone_stride_bytes);
    for zone in zones {
        let offset = space.zone_offset_bytes(*zone);
        match device.zoned() {
            Some(zoned) => zoned.zone_reset(device_zone(zoned, space, *zone)?)?,
            None if space.options().artifact.trim_off => {}
            None => {
                assert_eq!(zone_bytes, stride_bytes, "a conventional device has no zone stride");
                device.trim(offset, zone_bytes)?
            }
        }
    }
    Ok(())
}

/// On a fresh store over a zoned device: resets every space zone the device reports written
/// (an earlier database's), since appends start at a zone's start. A conventional device needs
/// nothing: its slots are overwritten where the space puts them.
pub fn reset_written_zones<D: Device + ?Sized>(
    device: &D,
    space: &Space,
) -> Result<(), DeviceError> {
    // A fresh space: every zone empty, so every device zone it resets holds no page of it.
    debug_assert_eq!(
        space.empty_zone_count(),
        space.zone_count(),
        "zones reset under a space that has written some"
    );
    let Some(zoned) = device.zoned() else { return Ok(()) };
    let states = zone_states(zoned)?;
    for zone in 0..space.zone_count() {
        let device_zone = device_zone(zoned, space, zone)?;
        if states[device_zone as usize].is_some_and(|c| c != ZoneCondition::Empty) {
            zoned.zone_reset(device_zone)?;
        }
    }
    Ok(())
}

/// After recovery on a zoned device: every zone the space rebuilt as full (it holds mapped
/// pages; its unlogged tail counts as dead) is finished on the device too if it is not, so no
/// append lands there and it stops holding one of the device's open or active zones. A conventional
/// device needs nothing.
pub fn finish_zones<D: Device + ?Sized>(device: &D, space: &Space) -> Result<(), DeviceError> {
    // Right after recovery, which opens no zone: finishing an open one would strand appends.
    debug_assert_eq!(space.open_zone_count(), 0, "zones finished while some are open");
    let Some(zoned) = device.zoned() else { return Ok(()) };
    let states = zone_states(zoned)?;
    for (zone, z) in space.zones().iter() {
        if z.state() != super::zone::ZoneState::Full {
            continue;
        }
        let device_zone = device_zone(zoned, space, zone)?;
        match states[device_zone as usize] {
            Some(ZoneCondition::Full) => {}
            Some(_) => zoned.zone_finish(device_zone)?,
            None => return Err(DeviceError::Unsupported("the zone report lacks a space zone")),
        }
    }
    Ok(())
}

/// Each device zone's condition by zone id, from one zone report (None: not reported, as a
/// volume's conventional zones).
fn zone_states(zoned: &dyn Zoned) -> Result<Vec<Option<ZoneCondition>>, DeviceError> {
    // Space zones are device zones (`device_zone`): a space on this device needs one.
    debug_assert!(zoned.zone_count() > 0, "a zoned device without zones");
    let mut states = vec![None; zoned.zone_count() as usize];
    for info in zoned.report_zones()? {
        if let Some(state) = states.get_mut(info.zone as usize) {
            *state = Some(info.condition);
        }
    }
    Ok(states)
}

/// The device zone that is space zone `zone`: space zones must be the device's zones (same
/// stride and capacity, starting at a zone boundary).
pub fn device_zone(zoned: &dyn Zoned, space: &Space, zone: ZoneId) -> Result<u32, DeviceError> {
    let o = space.options();
    let offset = space.zone_offset_bytes(zone);
    let stride_bytes = zoned.zone_bytes();
    if stride_bytes != o.zone_stride_bytes
        || zoned.zone_capacity_bytes() != o.zone_bytes
        || !offset.is_multiple_of(stride_bytes)
    {
        return Err(DeviceError::Unsupported("space zones must be the device's zones"));
    }
    let device_zone = offset / stride_bytes;
    assert!(device_zone < u64::from(zoned.zone_count()));
    Ok(device_zone as u32)
}

/// Writes an encoded snapshot at `offset` in one batch (purpose Metadata); durable after the
/// caller's sync.
pub fn write_snapshot<D: Device + ?Sized>(
    device: &D,
    offset: u64,
    bytes: &[u8],
) -> Result<(), DeviceError> {
    assert!(!bytes.is_empty() && bytes.len().is_multiple_of(BLOCK_BYTES));
    device.write_batch(&[WriteOp {
        offset,
        data: bytes,
        purpose: WritePurpose::Metadata,
        placement: crate::device::Placement::None,
    }])
}

/// Reads and decodes the snapshot at `offset`: the header block first, then as many blocks as
/// it names (bounded by the device capacity, so a corrupt count cannot ask for a huge read).
pub fn read_snapshot<D: Device + ?Sized>(
    device: &D,
    offset: u64,
    zone_count: u32,
    slots_per_zone: u32,
) -> crate::Result<MapSnapshot> {
    let mut first = vec![0u8; BLOCK_BYTES];
    device.read_at(offset, &mut first)?;
    let header = snapshot::decode_header(&first)?;
    let len = u64::from(header.block_count) * BLOCK_BYTES as u64;
    if offset.checked_add(len).is_none_or(|end| end > device.capacity_bytes()) {
        let blocks = header.block_count.into();
        return Err(crate::Corruption::MapSnapshotPastDevice { blocks, offset }.into());
    }
    let mut bytes = vec![0u8; len as usize];
    device.read_at(offset, &mut bytes)?;
    let snap = snapshot::decode(&bytes, zone_count, slots_per_zone)?;
    // What recovery replays onto: the decoder counted the map it built against its header.
    debug_assert_eq!(snap.map.mapped_count(), snap.header.mapped_count, "decoded map count");
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Counted, MemoryDevice};
    use crate::space::{Location, PageMap, SpaceOptions};

    #[test]
    fn snapshot_round_trips_through_a_device() {
        let device = MemoryDevice::new(1 << 20);
        let mut map = PageMap::new();
        for pid in 0..1500 {
            map.set(pid * 2, Location::new((pid % 32) as u32, (pid % 4) as u32, 4096));
        }
        let bytes = snapshot::encode(&map, 9, 32, 4, None);
        write_snapshot(&device, 8192, &bytes).unwrap();
        let snap = read_snapshot(&device, 8192, 32, 4).unwrap();
        assert_eq!((snap.map, snap.header.lsn), (map, 9));
        assert!(read_snapshot(&device, 0, 32, 4).is_err(), "zeros are not a snapshot");
    }

    #[test]
    fn released_zones_are_trimmed() {
        let device = Counted::new(MemoryDevice::new(1 << 20), Default::default());
        let space = Space::new(SpaceOptions::test_min()).unwrap();
        reset_zones(&device, &space, &[1, 3]).unwrap();
        assert_eq!(device.stats().snapshot().trim_bytes, 2 * 4 * 4096);
    }

    #[test]
    fn released_zones_are_not_trimmed_with_trim_off() {
        let device = Counted::new(MemoryDevice::new(1 << 20), Default::default());
        let artifact = crate::space::ArtifactOptions { trim_off: true, ..Default::default() };
        let space = Space::new(SpaceOptions { artifact, ..SpaceOptions::test_min() }).unwrap();
        reset_zones(&device, &space, &[1, 3]).unwrap();
        let io = device.stats().snapshot();
        assert_eq!((io.trim_bytes, io.write_bytes.iter().sum::<u64>()), (0, 0));
    }

    /// On ZNS a released zone is reset through the device's zone interface, after which it
    /// accepts writes from its start again; space zones that are not device zones are refused.
    #[test]
    fn released_zones_are_reset_on_zns() {
        let device = crate::device::tiny_zns();
        let zone_bytes = device.zoned().unwrap().zone_bytes();
        let options = SpaceOptions {
            data_bytes: device.capacity_bytes(),
            ..SpaceOptions::test_min().with_zone_bytes(zone_bytes)
        };
        let mut space = Space::new(options).unwrap();
        let slots = space.slots_per_zone();
        let data = vec![7u8; zone_bytes as usize];
        let write = |space: &mut Space, pid0: u64, lsn: u64| {
            let runs = space.reserve_batch(slots, 0, WritePurpose::UserEviction).unwrap();
            assert_eq!(runs.len(), 1);
            device
                .write_at(space.run_offset_bytes(&runs[0]), &data, WritePurpose::UserEviction)
                .unwrap();
            for i in 0..slots {
                space.commit(pid0 + u64::from(i), runs[0].location(i, 4096), lsn);
            }
            runs[0].zone
        };
        let zone = write(&mut space, 0, 1);
        for pid in 0..u64::from(slots) {
            space.free_pid(pid, 2);
        }
        let plan = space.plan_gc().unwrap();
        assert_eq!((plan.zones[0], plan.valid.len()), (zone, 0));
        space.finish_victim(zone, 2);
        let released = space.release_ready(2);
        assert_eq!(released, vec![zone]);
        let start = space.zone_offset_bytes(zone);
        assert!(device.write_at(start, &data[..4096], WritePurpose::UserEviction).is_err());
        reset_zones(&device, &space, &released).unwrap();
        let info = device.zoned().unwrap().report_zones().unwrap();
        assert_eq!(info[zone as usize].write_pointer, info[zone as usize].start);
        // The zone takes writes from its start again (refused while it was full, above).
        let offset = space.zone_offset_bytes(zone);
        device.write_at(offset, &data[..4096], WritePurpose::UserEviction).unwrap();

        let bad = Space::new(options.with_zone_bytes(zone_bytes / 2)).unwrap();
        assert!(matches!(reset_zones(&device, &bad, &[1]), Err(DeviceError::Unsupported(_))));
    }
}
