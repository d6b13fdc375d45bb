//! ZNS: zone state machine, write pointer, append, limits; every violation is a specific error
//! and changes nothing (zone report, counters and data compared before and after).
#![allow(clippy::unwrap_used)]
use flashemu::{Config, EmuError, Placement, Ssd, StoreKind, ZoneInfo, ZoneState, LBA_BYTES};

/// tiny flash as ZNS: 64 zones of 32 blocks, capacity 24, at most 2 open and 3 active.
fn device() -> Ssd {
    let mut config = Config::preset("tiny").unwrap();
    config.set("interface", "zns").unwrap();
    config.set("zone-capacity-blocks", "24").unwrap();
    config.set("max-open-zones", "2").unwrap();
    config.set("max-active-zones", "3").unwrap();
    config.store = StoreKind::Memory;
    Ssd::new(config).unwrap()
}

const ZONE: u64 = 32;

fn block(fill: u8, blocks: usize) -> Vec<u8> {
    vec![fill; blocks * LBA_BYTES as usize]
}

/// Snapshot of everything observable, to prove a refused command changed nothing.
fn observe(ssd: &mut Ssd) -> (Vec<ZoneInfo>, flashemu::Counters, Vec<u8>) {
    let zones = ssd.report_zones().unwrap();
    let counters = ssd.counters();
    // The first (up to 4) written blocks of zone 0: reads beyond the write pointer fail.
    let readable = zones[0].write_pointer_lba.min(4) as usize;
    let mut data = block(0, readable);
    ssd.read(0, &mut data).unwrap();
    (zones, counters, data)
}

fn refused(ssd: &mut Ssd, op: impl FnOnce(&mut Ssd) -> Result<(), EmuError>) -> EmuError {
    let before = observe(ssd);
    let err = op(ssd).expect_err("the command must be refused");
    let after = observe(ssd);
    assert_eq!(before.0, after.0, "zones changed by a refused command: {err}");
    // observe() itself reads 4 blocks; everything else must be equal.
    assert_eq!(before.1.host_write_bytes, after.1.host_write_bytes);
    assert_eq!(before.1.flash_bytes(), after.1.flash_bytes());
    assert_eq!(before.2, after.2);
    err
}

#[test]
fn writes_must_be_at_the_write_pointer() {
    let mut ssd = device();
    ssd.write(0, 4, Some(&block(1, 4)), Placement::None).unwrap();
    let err = refused(&mut ssd, |s| s.write(5, 1, None, Placement::None));
    assert!(
        matches!(err, EmuError::NotAtWritePointer { zone: 0, lba: 5, write_pointer: 4 }),
        "{err}"
    );
    let err = refused(&mut ssd, |s| s.write(0, 1, None, Placement::None));
    assert!(
        matches!(err, EmuError::NotAtWritePointer { zone: 0, lba: 0, write_pointer: 4 }),
        "{err}"
    );
    // Crossing the zone capacity (24) is a boundary error, even from the write pointer.
    let err = refused(&mut ssd, |s| s.write(4, 21, None, Placement::None));
    assert!(matches!(err, EmuError::ZoneBoundary { zone: 0 }), "{err}");
    // Placement hints are not for ZNS.
    let err = refused(&mut ssd, |s| s.write(4, 1, None, Placement::Stream(1)));
    assert!(matches!(err, EmuError::BadPlacement(_)), "{err}");
    let err = refused(&mut ssd, |s| s.trim(0, 1));
    assert!(matches!(err, EmuError::WrongInterface { .. }), "{err}");
    let mut buf = block(0, 1);
    let err = ssd.read(4, &mut buf).unwrap_err();
    assert!(matches!(err, EmuError::ReadBeyondWritePointer { zone: 0, lba: 4 }), "{err}");
    ssd.read(3, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 1));
}

#[test]
fn append_returns_the_lba_and_full_zones_refuse_writes() {
    let mut ssd = device();
    assert_eq!(ssd.zone_append(1, 3, Some(&block(2, 3))).unwrap(), ZONE);
    assert_eq!(ssd.zone_append(1, 20, None).unwrap(), ZONE + 3);
    let err = refused(&mut ssd, |s| s.zone_append(1, 2, None).map(|_| ()));
    assert!(matches!(err, EmuError::ZoneBoundary { zone: 1 }), "{err}");
    assert_eq!(ssd.zone_append(1, 1, None).unwrap(), ZONE + 23);
    assert_eq!(ssd.report_zones().unwrap()[1].state, ZoneState::Full);
    let err = refused(&mut ssd, |s| s.zone_append(1, 1, None).map(|_| ()));
    assert!(matches!(err, EmuError::ZoneFull { zone: 1 }), "{err}");
    let err = refused(&mut ssd, |s| s.write(ZONE + 24, 1, None, Placement::None));
    assert!(matches!(err, EmuError::ZoneFull { zone: 1 }), "{err}");
    let err = refused(&mut ssd, |s| s.zone_append(64, 1, None).map(|_| ()));
    assert!(matches!(err, EmuError::NoSuchZone { zone: 64, zone_count: 64 }), "{err}");
    let mut buf = block(0, 3);
    ssd.read(ZONE, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 2));
}

#[test]
fn open_and_active_limits() {
    let mut ssd = device();
    ssd.write(0, 1, None, Placement::None).unwrap(); // zone 0 implicitly open
    ssd.zone_open(1).unwrap(); // zone 1 explicitly open: 2 open, 2 active
    let err = refused(&mut ssd, |s| s.write(2 * ZONE, 1, None, Placement::None));
    assert!(matches!(err, EmuError::TooManyOpenZones { limit: 2 }), "{err}");
    let err = refused(&mut ssd, |s| s.zone_open(2));
    assert!(matches!(err, EmuError::TooManyOpenZones { limit: 2 }), "{err}");
    ssd.zone_close(0).unwrap(); // written: Closed, still active
    assert_eq!(ssd.report_zones().unwrap()[0].state, ZoneState::Closed);
    ssd.zone_close(1).unwrap(); // never written: back to Empty, not active
    assert_eq!(ssd.report_zones().unwrap()[1].state, ZoneState::Empty);
    ssd.write(2 * ZONE, 1, None, Placement::None).unwrap(); // 1 open, 2 active
    ssd.write(3 * ZONE, 1, None, Placement::None).unwrap(); // 2 open, 3 active
    ssd.zone_close(3).unwrap(); // 1 open, 3 active
    let err = refused(&mut ssd, |s| s.write(4 * ZONE, 1, None, Placement::None));
    assert!(matches!(err, EmuError::TooManyActiveZones { limit: 3 }), "{err}");
    // Writing to a closed zone reopens it (it is already active).
    ssd.write(1, 1, None, Placement::None).unwrap();
    assert_eq!(ssd.report_zones().unwrap()[0].state, ZoneState::ImplicitlyOpen);
    // Finish frees the active resource.
    ssd.zone_finish(0).unwrap();
    ssd.write(4 * ZONE, 1, None, Placement::None).unwrap();
    let err = refused(&mut ssd, |s| s.zone_close(5));
    assert!(
        matches!(err, EmuError::InvalidZoneState { zone: 5, state: "empty", op: "close" }),
        "{err}"
    );
    let err = refused(&mut ssd, |s| s.zone_open(0));
    assert!(
        matches!(err, EmuError::InvalidZoneState { zone: 0, state: "full", op: "open" }),
        "{err}"
    );
}

#[test]
fn reset_erases_and_reads_zero() {
    let mut ssd = device();
    ssd.write(0, 24, Some(&block(9, 24)), Placement::None).unwrap();
    assert_eq!(ssd.report_zones().unwrap()[0].state, ZoneState::Full);
    let erases = ssd.counters().superblock_erases;
    ssd.zone_reset(0).unwrap();
    let zone = ssd.report_zones().unwrap()[0];
    assert_eq!((zone.state, zone.write_pointer_lba), (ZoneState::Empty, 0));
    assert_eq!(ssd.counters().superblock_erases, erases + 1);
    let erase_counts = ssd.block_erase_counts();
    assert_eq!(
        erase_counts.iter().map(|&n| u64::from(n)).sum::<u64>(),
        ssd.counters().block_erases
    );
    let mut buf = block(1, 1);
    assert!(matches!(ssd.read(0, &mut buf), Err(EmuError::ReadBeyondWritePointer { .. })));
    ssd.write(0, 1, None, Placement::None).unwrap();
    ssd.read(0, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "a reset zone reads zeros, not the old bytes");
    // Resetting an empty zone erases nothing.
    ssd.zone_reset(7).unwrap();
    assert_eq!(ssd.counters().superblock_erases, erases + 1);
}

#[test]
fn zns_waf_is_exactly_one() {
    let mut config = Config::preset("zns").unwrap();
    // 16 KiB flash pages, full-capacity zones; shrink the flash so the test is quick.
    config.set("blocks-per-chip", "4").unwrap();
    config.set("max-open-zones", "4").unwrap();
    config.set("max-active-zones", "4").unwrap();
    config.store = StoreKind::None;
    let mut ssd = Ssd::new(config).unwrap();
    let zones = ssd.zone_count();
    let zone_blocks = ssd.report_zones().unwrap()[0].capacity_blocks;
    for round in 0..3u32 {
        for zone in 0..zones {
            let mut written = 0;
            while written < zone_blocks {
                let n = (zone_blocks - written).min(64) as u32;
                ssd.zone_append(zone, n, None).unwrap();
                written += u64::from(n);
            }
        }
        for zone in 0..zones {
            ssd.zone_reset(zone).unwrap();
        }
        assert_eq!(ssd.counters().waf(), Some(1.0), "round {round}");
    }
    let c = ssd.counters();
    assert_eq!((c.flash_gc_bytes, c.flash_pad_bytes, c.gc_copied_blocks), (0, 0, 0));
    assert_eq!(c.superblock_erases, 3 * u64::from(zones));
}

#[test]
fn finish_pads_a_partial_flash_page() {
    let mut config = Config::preset("zns").unwrap();
    config.set("blocks-per-chip", "4").unwrap();
    config.store = StoreKind::None;
    let mut ssd = Ssd::new(config).unwrap();
    ssd.write(0, 5, None, Placement::None).unwrap(); // 16 KiB pages: 1 page + 1 block
    assert_eq!(ssd.counters().flash_host_bytes, 16384);
    ssd.zone_finish(0).unwrap();
    let c = ssd.counters();
    assert_eq!((c.flash_host_bytes, c.flash_pad_bytes), (5 * 4096, 3 * 4096));
}
