//! A ZNS device for crash tests: sequential zones in memory that lose power on command.
//!
//! The zone rules are the NVMe ZNS ones the emulator also enforces (writes only at the write
//! pointer, zone append returns where it landed, reset before reuse, finish, open/active
//! limits; no zone is closed behind the host's back). What a power cut does follows the
//! sequential-write contract: a zone keeps a *prefix* of what was written to it since the last
//! sync, cut at a random block between its durable and its current write pointer, so there are
//! never holes below a write pointer; a reset or finish not yet covered by a sync either
//! happened or did not, at random. Every command has an I/O number (as [`super::FaultDevice`]
//! numbers its I/Os), so a test can cut power at I/O n.
use super::{
    check_range, Device, DeviceError, ReadOp, WriteOp, WritePurpose, ZoneCondition, ZoneInfo, Zoned,
};
use crate::rng::SplitMix64;
use std::sync::{Mutex, MutexGuard};

mod cw;

/// Bound on zones (and so on the memory one device may take).
const ZONES_MAX: u32 = 1 << 16;

/// One zone as the host sees it or as it is durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Image {
    /// Bytes below the write pointer (its length is the write pointer).
    data: Vec<u8>,
    full: bool,
    /// Compressed chunks by start offset, the OOB metadata of a CCZNS device (cw.rs).
    chunks: Vec<Chunk>,
    /// Opened as a padding zone (until its reset).
    padding: bool,
}

/// One chunk's metadata (CCZNS writes, `cw.rs`): where it starts in its zone, its stored and
/// feedback sizes, and whether it is stored raw (compression did not shrink it). Defined here,
/// with the zone that holds it, so this file need not name `cw.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    at: u64,
    stored_bytes: u32,
    feedback_bytes: u32,
    raw: bool,
}

#[derive(Debug, Clone, Default)]
struct Zone {
    visible: Image,
    durable: Image,
    /// Reset since the last sync: the visible image does not extend the durable one.
    reset_pending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZonedFaultGeometry {
    pub zone_bytes: u64,
    pub zone_capacity_bytes: u64,
    pub zone_count: u32,
    pub max_open_zones: u32,
}

#[derive(Debug)]
struct State {
    zones: Vec<Zone>,
    io_count: u64,
    crash_at_io: Option<u64>,
    powered: bool,
}

#[derive(Debug)]
pub struct ZonedFaultDevice {
    geometry: ZonedFaultGeometry,
    /// CCZNS commands on, with this chunk placement unit (`with_compression`).
    chunk_align_bytes: Option<u32>,
    state: Mutex<State>,
}

impl ZonedFaultDevice {
    /// Panics on a geometry no test should build (capacity above the zone size, not whole
    /// blocks, no zones or too many).
    pub fn new(geometry: ZonedFaultGeometry) -> ZonedFaultDevice {
        let g = geometry;
        assert!(
            g.zone_capacity_bytes >= super::BLOCK_BYTES && g.zone_capacity_bytes <= g.zone_bytes
        );
        assert!(g.zone_bytes.is_multiple_of(super::BLOCK_BYTES));
        assert!(g.zone_capacity_bytes.is_multiple_of(super::BLOCK_BYTES));
        assert!(g.zone_count >= 1 && g.zone_count <= ZONES_MAX && g.max_open_zones >= 1);
        let zones = vec![Zone::default(); g.zone_count as usize];
        ZonedFaultDevice::with_zones(geometry, zones)
    }

    fn with_zones(geometry: ZonedFaultGeometry, zones: Vec<Zone>) -> ZonedFaultDevice {
        let state = State { zones, io_count: 0, crash_at_io: None, powered: true };
        ZonedFaultDevice { geometry, chunk_align_bytes: None, state: Mutex::new(state) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn io_count(&self) -> u64 {
        self.state().io_count
    }

    /// Loses power at I/O number `io`: that command and every later one fail with PowerLost.
    pub fn crash_at_io(&self, io: u64) {
        self.state().crash_at_io = Some(io);
    }

    /// The device after a power cut: each zone keeps its durable image plus a random prefix of
    /// what came after (whole blocks), and a reset or finish since the last sync took effect
    /// or not, decided by `seed`.
    pub fn power_cut(&self, seed: u64) -> ZonedFaultDevice {
        let mut rng = SplitMix64::new(seed);
        let st = self.state();
        let capacity = self.geometry.zone_capacity_bytes;
        let zones = st.zones.iter().map(|z| cut_zone(z, capacity, &mut rng)).collect();
        let cut = ZonedFaultDevice::with_zones(self.geometry, zones);
        ZonedFaultDevice { chunk_align_bytes: self.chunk_align_bytes, ..cut }
    }

    /// Counts a command and checks power: the command numbered `crash_at_io` and all later
    /// ones fail.
    fn begin(st: &mut State) -> Result<(), DeviceError> {
        let n = st.io_count;
        st.io_count += 1;
        if st.crash_at_io.is_some_and(|at| n >= at) {
            st.powered = false;
        }
        if st.powered {
            Ok(())
        } else {
            Err(DeviceError::PowerLost)
        }
    }

    fn open_zones(st: &State) -> u32 {
        st.zones
            .iter()
            .filter(|z| !z.visible.full && (z.open_padding() || !z.visible.data.is_empty()))
            .count() as u32
    }

    /// Appends `data` to `zone` at its write pointer; returns the zone-relative offset.
    fn append(&self, st: &mut State, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        let g = self.geometry;
        let opening = st.zones.get(zone as usize).is_some_and(|z| z.visible.data.is_empty());
        if opening && Self::open_zones(st) >= g.max_open_zones {
            return Err(DeviceError::Unsupported("too many open zones"));
        }
        let z = zone_mut(st, zone)?;
        let wp = z.visible.data.len() as u64;
        if z.visible.full || wp + data.len() as u64 > g.zone_capacity_bytes {
            return Err(DeviceError::Unsupported(
                "write past the zone's capacity or to a full zone",
            ));
        }
        z.visible.data.extend_from_slice(data);
        z.visible.full = z.visible.data.len() as u64 == g.zone_capacity_bytes;
        Ok(wp)
    }

    /// The zone and zone-relative offset of device `offset`.
    fn locate(&self, offset: u64) -> (u32, u64) {
        ((offset / self.geometry.zone_bytes) as u32, offset % self.geometry.zone_bytes)
    }
}

fn zone_mut(st: &mut State, zone: u32) -> Result<&mut Zone, DeviceError> {
    st.zones.get_mut(zone as usize).ok_or(DeviceError::Unsupported("no such zone"))
}

/// What one zone looks like after a power cut (`capacity_bytes`: the zone capacity).
fn cut_zone(z: &Zone, capacity_bytes: u64, rng: &mut SplitMix64) -> Zone {
    let block = super::BLOCK_BYTES as usize;
    // An unsynced reset happened (the zone starts empty) or did not (the durable image).
    let reset_happened = z.reset_pending && rng.next_u64().is_multiple_of(2);
    let base = if reset_happened { Image::default() } else { z.durable.clone() };
    let mut image = base.clone();
    if !base.full && z.visible.data.starts_with(&base.data) {
        let extra_blocks = (z.visible.data.len() - base.data.len()) / block;
        let kept = (rng.next_u64() % (extra_blocks as u64 + 1)) as usize;
        image.data = z.visible.data[..base.data.len() + kept * block].to_vec();
        // A zone written to its capacity is full; an unsynced finish after everything else
        // happened or not.
        let finished = z.visible.full && kept == extra_blocks && rng.next_u64().is_multiple_of(2);
        image.full = image.data.len() as u64 == capacity_bytes || finished;
        // A chunk survives when all its bytes did (its OOB entry without them reads nothing).
        let kept_bytes = image.data.len() as u64;
        image.chunks = z.visible.chunks.iter().copied().filter(|c| c.end() <= kept_bytes).collect();
    }
    // An explicit open is no data: an empty zone comes back closed, a padding zone's mode
    // stays with its data.
    image.padding = image.padding && !image.data.is_empty();
    assert!(image.data.len() as u64 <= capacity_bytes);
    Zone { visible: image.clone(), durable: image, reset_pending: false }
}

impl Device for ZonedFaultDevice {
    fn capacity_bytes(&self) -> u64 {
        self.geometry.zone_bytes * u64::from(self.geometry.zone_count)
    }

    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        let mut st = self.state();
        for op in ops.iter_mut() {
            Self::begin(&mut st)?;
            check_range(op.offset, op.buf.len() as u64, self.capacity_bytes())?;
            let (zone, at) = self.locate(op.offset);
            let data = &zone_mut(&mut st, zone)?.visible.data;
            let end = at as usize + op.buf.len();
            if end > data.len() {
                return Err(DeviceError::Unsupported("read past a zone's write pointer"));
            }
            op.buf.copy_from_slice(&data[at as usize..end]);
        }
        Ok(())
    }

    /// Writes at each zone's write pointer (a write elsewhere is refused, as ZNS does).
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        let mut st = self.state();
        for op in ops {
            Self::begin(&mut st)?;
            check_range(op.offset, op.data.len() as u64, self.capacity_bytes())?;
            let (zone, at) = self.locate(op.offset);
            if zone_mut(&mut st, zone)?.visible.data.len() as u64 != at {
                return Err(DeviceError::Unsupported("write off a zone's write pointer"));
            }
            self.append(&mut st, zone, op.data)?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), DeviceError> {
        let mut st = self.state();
        Self::begin(&mut st)?;
        for z in &mut st.zones {
            z.durable = z.visible.clone();
            z.reset_pending = false;
        }
        Ok(())
    }

    fn trim(&self, _offset: u64, _len: u64) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("trim on a zoned device (reset the zone)"))
    }

    fn zoned(&self) -> Option<&dyn Zoned> {
        Some(self)
    }

    fn capabilities(&self) -> super::DeviceCapabilities {
        let g = self.geometry;
        super::DeviceCapabilities {
            zones: Some(super::ZoneGeometry {
                zone_bytes: g.zone_bytes,
                zone_capacity_bytes: g.zone_capacity_bytes,
                zone_count: g.zone_count,
                conventional_zones: 0,
                max_open_zones: g.max_open_zones,
                max_active_zones: g.max_open_zones,
            }),
            in_storage_compression: self
                .chunk_align_bytes
                .map(|chunk_align_bytes| super::InStorageCompression { chunk_align_bytes }),
            ..Default::default()
        }
    }
}

impl Zoned for ZonedFaultDevice {
    fn zone_bytes(&self) -> u64 {
        self.geometry.zone_bytes
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.geometry.zone_capacity_bytes
    }
    fn zone_count(&self) -> u32 {
        self.geometry.zone_count
    }
    fn zone_append(&self, zone: u32, data: &[u8], _: WritePurpose) -> Result<u64, DeviceError> {
        let mut st = self.state();
        Self::begin(&mut st)?;
        check_range(0, data.len() as u64, self.geometry.zone_capacity_bytes)?;
        let at = self.append(&mut st, zone, data)?;
        Ok(u64::from(zone) * self.geometry.zone_bytes + at)
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        let mut st = self.state();
        Self::begin(&mut st)?;
        let z = zone_mut(&mut st, zone)?;
        z.visible = Image::default();
        z.reset_pending = true;
        Ok(())
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        let mut st = self.state();
        Self::begin(&mut st)?;
        zone_mut(&mut st, zone)?.visible.full = true;
        Ok(())
    }
    fn compressed_write(
        &self,
        offset: u64,
        chunks: &[super::CwChunk<'_>],
    ) -> Result<super::CwDone, DeviceError> {
        self.cw(offset, chunks)
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        self.dr(offset, feedback_bytes, buf)
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.open_padding(zone)
    }
    fn report_zones(&self) -> Result<Vec<ZoneInfo>, DeviceError> {
        let mut st = self.state();
        Self::begin(&mut st)?;
        let zone_bytes = self.geometry.zone_bytes;
        let infos = st.zones.iter().enumerate().map(|(i, z)| {
            let start = i as u64 * zone_bytes;
            let condition = match (z.visible.full, z.visible.data.is_empty()) {
                (true, _) => ZoneCondition::Full,
                (false, true) => ZoneCondition::Empty,
                (false, false) => ZoneCondition::Active,
            };
            ZoneInfo {
                zone: i as u32,
                start,
                write_pointer: start + z.visible.data.len() as u64,
                condition,
            }
        });
        Ok(infos.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BLOCK_BYTES;

    fn device() -> ZonedFaultDevice {
        ZonedFaultDevice::new(ZonedFaultGeometry {
            zone_bytes: 8 * BLOCK_BYTES,
            zone_capacity_bytes: 6 * BLOCK_BYTES,
            zone_count: 4,
            max_open_zones: 2,
        })
    }

    fn block(fill: u8) -> Vec<u8> {
        vec![fill; BLOCK_BYTES as usize]
    }

    #[test]
    fn zone_rules_hold() {
        let d = device();
        assert_eq!(
            d.zone_append(1, &block(1), WritePurpose::UserEviction).unwrap(),
            8 * BLOCK_BYTES
        );
        assert!(d.write_at(8 * BLOCK_BYTES, &block(2), WritePurpose::UserEviction).is_err());
        d.write_at(9 * BLOCK_BYTES, &block(2), WritePurpose::UserEviction).unwrap();
        d.zone_append(2, &block(3), WritePurpose::UserEviction).unwrap();
        assert!(d.zone_append(3, &block(4), WritePurpose::UserEviction).is_err(), "open limit");
        assert!(d
            .zone_append(2, &vec![0; 6 * BLOCK_BYTES as usize], WritePurpose::GcCopy)
            .is_err());
        let mut buf = block(0);
        d.read_at(9 * BLOCK_BYTES, &mut buf).unwrap();
        assert_eq!(buf, block(2));
        assert!(d.read_at(10 * BLOCK_BYTES, &mut buf).is_err(), "past the write pointer");
        d.zone_finish(2).unwrap();
        d.zone_append(3, &block(4), WritePurpose::UserEviction).unwrap();
        assert_eq!(d.report_zones().unwrap()[2].condition, ZoneCondition::Full);
        d.zone_reset(2).unwrap();
        assert_eq!(d.report_zones().unwrap()[2].condition, ZoneCondition::Empty);
    }

    /// Unsynced appends survive as a prefix of whole blocks, synced ones always, and an
    /// unsynced reset either happened (empty zone) or did not (old contents).
    #[test]
    fn power_cuts_keep_a_prefix_and_resets_happen_or_not() {
        let mut seen_prefixes = std::collections::BTreeSet::new();
        let mut seen_reset = [false; 2];
        for seed in 0..64 {
            let d = device();
            d.zone_append(0, &block(1), WritePurpose::UserEviction).unwrap();
            d.zone_append(1, &block(9), WritePurpose::UserEviction).unwrap();
            d.sync().unwrap();
            d.zone_append(0, &[block(2), block(3)].concat(), WritePurpose::UserEviction).unwrap();
            d.zone_reset(1).unwrap();
            let cut = d.power_cut(seed);
            let zones = cut.report_zones().unwrap();
            let blocks = (zones[0].write_pointer - zones[0].start) / BLOCK_BYTES;
            assert!((1..=3).contains(&blocks), "{blocks}");
            seen_prefixes.insert(blocks);
            let mut buf = vec![0u8; (blocks * BLOCK_BYTES) as usize];
            cut.read_at(0, &mut buf).unwrap();
            assert_eq!(buf, [block(1), block(2), block(3)].concat()[..buf.len()]);
            let reset = zones[1].condition == ZoneCondition::Empty;
            seen_reset[usize::from(reset)] = true;
        }
        assert_eq!(seen_prefixes.len(), 3);
        assert_eq!(seen_reset, [true, true]);
    }

    /// CW/DR on the crash-test device: chunks on 32-byte units, the last padded to a block in
    /// a padding zone, every chunk reads back, reads naming no chunk or another size are
    /// refused, and a power cut keeps the synced chunks and a whole-block prefix of the others
    /// (each surviving chunk reads back, none half).
    #[test]
    fn compressed_writes_read_back_and_survive_cuts_whole() {
        use crate::device::CwChunk;
        let text = |seed: u8| -> Vec<u8> {
            (0..4096u32).map(|i| b'a' + ((i / 7 + u32::from(seed)) % 5) as u8).collect()
        };
        let mut rng = SplitMix64::new(3);
        let noise: Vec<u8> = (0..4096).map(|_| rng.next_u64() as u8).collect();
        let pages = [text(1), noise, text(2)];
        let chunks: Vec<CwChunk<'_>> = pages
            .iter()
            .map(|p| CwChunk { data: p, purpose: WritePurpose::UserEviction })
            .collect();
        for seed in 0..16 {
            let d = device().with_compression(32);
            // Outside a padding zone the last chunk is not padded: the pointer stays on a unit.
            let plain = d.compressed_write(0, &chunks[..1]).unwrap();
            let c = plain.chunks[0];
            assert_eq!(c.feedback_bytes, c.stored_bytes.next_multiple_of(32));
            assert_eq!(plain.write_pointer, u64::from(c.feedback_bytes));
            assert!(d.compressed_write(0, &chunks[..1]).is_err(), "off the write pointer");
            d.zone_open_padding(1).unwrap();
            let at = 8 * BLOCK_BYTES;
            let first = d.compressed_write(at, &chunks[..1]).unwrap();
            d.sync().unwrap();
            let done = d.compressed_write(first.write_pointer, &chunks).unwrap();
            assert_eq!(done.chunks.len(), 3);
            assert!(done.chunks.iter().all(|c| c.offset % 32 == 0));
            assert_eq!(done.write_pointer % BLOCK_BYTES, 0);
            assert_eq!(done.chunks[1].stored_bytes, 4096, "noise is stored raw");
            let mut buf = vec![0u8; 4096];
            for (c, p) in done.chunks.iter().zip(&pages) {
                assert_eq!(
                    d.decompressed_read(c.offset, c.feedback_bytes, &mut buf).unwrap(),
                    4096
                );
                assert_eq!(&buf, p);
            }
            let c = done.chunks[0];
            assert!(matches!(
                d.decompressed_read(c.offset, c.feedback_bytes + 32, &mut buf),
                Err(DeviceError::IllegalRead { .. })
            ));
            assert!(d.decompressed_read(c.offset + 32, 32, &mut buf).is_err());
            let cut = d.power_cut(seed);
            let f = first.chunks[0];
            assert_eq!(cut.decompressed_read(f.offset, f.feedback_bytes, &mut buf).unwrap(), 4096);
            for (c, p) in done.chunks.iter().zip(&pages) {
                if let Ok(n) = cut.decompressed_read(c.offset, c.feedback_bytes, &mut buf) {
                    assert_eq!((n, &buf), (4096, p));
                }
            }
        }
    }

    #[test]
    fn power_is_lost_at_the_chosen_io() {
        let d = device();
        d.crash_at_io(2);
        d.zone_append(0, &block(1), WritePurpose::UserEviction).unwrap();
        d.sync().unwrap();
        assert!(matches!(
            d.zone_append(0, &block(2), WritePurpose::UserEviction),
            Err(DeviceError::PowerLost)
        ));
        assert!(matches!(d.sync(), Err(DeviceError::PowerLost)));
        let cut = d.power_cut(7);
        assert_eq!(cut.report_zones().unwrap()[0].write_pointer, BLOCK_BYTES);
    }
}
