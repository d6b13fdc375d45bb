//! Tests of the fault model itself: the crash tests of the engine are only as good as this.
use super::*;
use crate::device::conformance::same;
use crate::device::{Device, Placement, WriteOp, WritePurpose, BLOCK_BYTES};

const PAGE: usize = BLOCK_BYTES as usize;
const SECTORS_PER_PAGE: usize = PAGE / SECTOR_BYTES;

fn page(fill: u8) -> Vec<u8> {
    vec![fill; PAGE]
}

fn read_page(dev: &FaultDevice, block: u64) -> Vec<u8> {
    let mut buf = page(0xEE);
    dev.read_at(block * BLOCK_BYTES, &mut buf).unwrap();
    buf
}

/// Per sector of a page: Some(fill) when the whole sector holds one byte value.
fn sector_fills(bytes: &[u8]) -> Vec<Option<u8>> {
    bytes.chunks(SECTOR_BYTES).map(|s| s.iter().all(|b| *b == s[0]).then_some(s[0])).collect()
}

#[test]
fn reads_see_unsynced_writes_before_the_crash() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.write_at(0, &page(1), WritePurpose::Wal).unwrap();
    same(&read_page(&dev, 0), &page(1), "fault", "unsynced read");
    assert_eq!(dev.unsynced_writes(), 1);
    dev.sync().unwrap();
    assert_eq!(dev.unsynced_writes(), 0);
}

#[test]
fn synced_writes_survive_every_power_cut() {
    for seed in 0..64 {
        let dev = FaultDevice::new(16 * BLOCK_BYTES);
        dev.write_at(0, &page(1), WritePurpose::Metadata).unwrap();
        dev.write_at(BLOCK_BYTES, &page(2), WritePurpose::Metadata).unwrap();
        dev.sync().unwrap();
        dev.write_at(2 * BLOCK_BYTES, &page(3), WritePurpose::Metadata).unwrap();
        let after = dev.power_cut(seed);
        let msg = format!("seed {seed}");
        same(&read_page(&after, 0), &page(1), "fault", &msg);
        same(&read_page(&after, 1), &page(2), "fault", &msg);
        // The unsynced block holds, sector by sector, either nothing (zeros) or the new bytes.
        for fill in sector_fills(&read_page(&after, 2)) {
            assert!(matches!(fill, Some(0 | 3)), "{msg}: sector neither old nor new: {fill:?}");
        }
    }
}

#[test]
fn unsynced_writes_are_dropped_kept_or_torn_at_sector_granularity() {
    let (mut dropped, mut kept, mut torn) = (false, false, false);
    for seed in 0..64 {
        let dev = FaultDevice::new(16 * BLOCK_BYTES);
        dev.write_at(0, &page(0xA0), WritePurpose::UserEviction).unwrap();
        dev.sync().unwrap();
        dev.write_at(0, &page(0xB0), WritePurpose::UserEviction).unwrap();
        let after = dev.power_cut(seed);
        let summary = after.crash_summary().unwrap();
        assert_eq!((summary.seed, summary.unsynced_writes), (seed, 1));
        let fills = sector_fills(&read_page(&after, 0));
        assert!(fills.iter().all(|f| matches!(f, Some(0xA0 | 0xB0))), "seed {seed}: {fills:?}");
        let new = fills.iter().filter(|f| **f == Some(0xB0)).count();
        match (summary.dropped_writes, summary.kept_writes, summary.torn_writes) {
            (1, 0, 0) => {
                assert_eq!(new, 0, "seed {seed}: a dropped write left new sectors");
                dropped = true;
            }
            (0, 1, 0) => {
                assert_eq!(new, SECTORS_PER_PAGE, "seed {seed}: a kept write lost sectors");
                kept = true;
            }
            (0, 0, 1) => torn |= new > 0 && new < SECTORS_PER_PAGE,
            other => panic!("seed {seed}: impossible summary {other:?}"),
        }
    }
    assert!(dropped && kept && torn, "64 seeds should show every outcome: {dropped} {kept} {torn}");
}

#[test]
fn the_old_device_is_dead_after_a_power_cut_and_the_new_one_is_clean() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.write_at(0, &page(1), WritePurpose::Wal).unwrap();
    dev.fail_all_after(0);
    let after = dev.power_cut(7);
    assert!(!dev.is_powered());
    assert!(matches!(dev.write_at(0, &page(2), WritePurpose::Wal), Err(DeviceError::PowerLost)));
    assert!(matches!(dev.sync(), Err(DeviceError::PowerLost)));
    assert!(matches!(dev.read_at(0, &mut page(0)), Err(DeviceError::PowerLost)));
    // Faults do not carry over: the reopened device works.
    after.write_at(0, &page(4), WritePurpose::Wal).unwrap();
    after.sync().unwrap();
    same(&read_page(&after, 0), &page(4), "fault", "after reopen");
}

#[test]
fn an_injected_write_failure_changes_nothing() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.write_at(0, &page(1), WritePurpose::Wal).unwrap();
    dev.sync().unwrap();
    let io = dev.io_count();
    assert_eq!(io, 2);
    // Fail the second op of the next batch: the first must not be applied either.
    dev.fail_io_at(io + 1);
    let (a, b) = (page(5), page(6));
    let ops = [
        WriteOp { offset: 0, data: &a, purpose: WritePurpose::Wal, placement: Placement::None },
        WriteOp {
            offset: BLOCK_BYTES,
            data: &b,
            purpose: WritePurpose::Wal,
            placement: Placement::None,
        },
    ];
    let err = dev.write_batch(&ops).unwrap_err();
    assert!(matches!(err, DeviceError::Injected(_)), "{err}");
    same(&read_page(&dev, 0), &page(1), "fault", "block 0 after failed batch");
    same(&read_page(&dev, 1), &page(0), "fault", "block 1 after failed batch");
    assert_eq!(dev.unsynced_writes(), 0);
    // The fault fires once: the retry succeeds.
    dev.write_batch(&ops).unwrap();
    same(&read_page(&dev, 1), &page(6), "fault", "block 1 after retry");
}

#[test]
fn nth_sync_and_read_failures_are_injected_and_harmless() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.fail_nth(IoKind::Sync, 1);
    dev.fail_nth(IoKind::Sync, 1);
    dev.write_at(0, &page(1), WritePurpose::Wal).unwrap();
    dev.sync().unwrap();
    dev.write_at(0, &page(2), WritePurpose::Wal).unwrap();
    assert!(matches!(dev.sync(), Err(DeviceError::Injected(_))));
    assert_eq!(dev.unsynced_writes(), 1, "a failed sync made something durable");
    assert_eq!((dev.sync_count(), dev.io_count_of(IoKind::Sync)), (1, 2));

    dev.fail_nth(IoKind::Read, 0);
    let mut buf = page(0xEE);
    assert!(matches!(dev.read_at(0, &mut buf), Err(DeviceError::Injected(_))));
    same(&read_page(&dev, 0), &page(2), "fault", "read after failed read");
}

#[test]
fn fail_all_after_fails_every_later_io() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.write_at(0, &page(1), WritePurpose::Wal).unwrap();
    dev.fail_all_after(1);
    for _ in 0..3 {
        assert!(matches!(
            dev.write_at(0, &page(2), WritePurpose::Wal),
            Err(DeviceError::Injected(_))
        ));
        assert!(matches!(dev.sync(), Err(DeviceError::Injected(_))));
        assert!(matches!(dev.trim(0, BLOCK_BYTES), Err(DeviceError::Injected(_))));
    }
    dev.clear_faults();
    same(&read_page(&dev, 0), &page(1), "fault", "after clear");
}

#[test]
fn crash_at_io_keeps_what_was_synced_before_it() {
    // A run without faults counts the I/Os; then crash at each of them in turn.
    let run = |dev: &FaultDevice| -> Result<(), DeviceError> {
        for block in 0..6u64 {
            dev.write_at(block * BLOCK_BYTES, &page(block as u8 + 1), WritePurpose::Wal)?;
            dev.sync()?;
        }
        Ok(())
    };
    let probe = FaultDevice::new(16 * BLOCK_BYTES);
    run(&probe).unwrap();
    let total = probe.io_count();
    assert_eq!(total, 12);
    for crash_io in 0..total {
        let dev = FaultDevice::new(16 * BLOCK_BYTES);
        dev.crash_at_io(crash_io);
        assert!(matches!(run(&dev), Err(DeviceError::PowerLost)), "crash at {crash_io}");
        let after = dev.power_cut(crash_io);
        // I/O 2k is the write of block k and 2k+1 its sync: blocks synced before the crash stay.
        let synced_blocks = crash_io / 2;
        for block in 0..synced_blocks {
            same(
                &read_page(&after, block),
                &page(block as u8 + 1),
                "fault",
                &format!("crash {crash_io}"),
            );
        }
        for block in synced_blocks + 1..6 {
            same(&read_page(&after, block), &page(0), "fault", &format!("crash {crash_io} later"));
        }
    }
}

#[test]
fn frozen_durability_loses_everything_after_the_nth_sync() {
    let dev = FaultDevice::new(16 * BLOCK_BYTES);
    dev.freeze_durability_at_sync(2);
    for block in 0..5u64 {
        dev.write_at(block * BLOCK_BYTES, &page(9), WritePurpose::Wal).unwrap();
        dev.sync().unwrap();
    }
    // Reads before the crash see everything; the image after it only what syncs 0 and 1 covered.
    same(&read_page(&dev, 4), &page(9), "fault", "visible before crash");
    let after = dev.power_cut(1);
    assert!(after.crash_summary().unwrap().frozen);
    for block in 0..5u64 {
        let want = if block < 2 { page(9) } else { page(0) };
        same(&read_page(&after, block), &want, "fault", &format!("frozen block {block}"));
    }
}

#[test]
fn unsynced_trim_reads_old_or_zero_after_crash() {
    for seed in 0..16 {
        let dev = FaultDevice::new(16 * BLOCK_BYTES);
        dev.write_at(0, &page(7), WritePurpose::Metadata).unwrap();
        dev.sync().unwrap();
        dev.trim(0, BLOCK_BYTES).unwrap();
        same(&read_page(&dev, 0), &page(0), "fault", "trim visible");
        let after = dev.power_cut(seed);
        for fill in sector_fills(&read_page(&after, 0)) {
            assert!(matches!(fill, Some(0 | 7)), "seed {seed}: {fill:?}");
        }
    }
}

/// Model test: random writes and syncs; after a crash every sector holds its durable contents or
/// the contents of one of the writes issued to it since the last sync, and nothing else.
#[test]
fn post_crash_sectors_come_from_durable_or_unsynced_writes() {
    const BLOCKS: u64 = 8;
    for seed in 0..40u64 {
        let mut rng = SplitMix64::new(seed);
        let dev = FaultDevice::new(BLOCKS * BLOCK_BYTES);
        // Model per sector: the durable fill and the fills written since the last sync.
        let sectors = BLOCKS as usize * SECTORS_PER_PAGE;
        let mut durable = vec![0u8; sectors];
        let mut unsynced: Vec<Vec<u8>> = vec![Vec::new(); sectors];
        let mut fill = 0u8;
        for _ in 0..60 {
            if rng.next_u64().is_multiple_of(4) {
                dev.sync().unwrap();
                for (d, u) in durable.iter_mut().zip(unsynced.iter_mut()) {
                    if let Some(last) = u.last() {
                        *d = *last;
                    }
                    u.clear();
                }
            } else {
                let block = rng.next_u64() % BLOCKS;
                fill = fill.wrapping_add(1).max(1);
                dev.write_at(block * BLOCK_BYTES, &page(fill), WritePurpose::UserEviction).unwrap();
                let first = block as usize * SECTORS_PER_PAGE;
                for u in &mut unsynced[first..first + SECTORS_PER_PAGE] {
                    u.push(fill);
                }
            }
        }
        let after = dev.power_cut(seed);
        for block in 0..BLOCKS {
            let fills = sector_fills(&read_page(&after, block));
            for (i, got) in fills.iter().enumerate() {
                let s = block as usize * SECTORS_PER_PAGE + i;
                let ok = got.is_some_and(|g| g == durable[s] || unsynced[s].contains(&g));
                assert!(
                    ok,
                    "seed {seed} sector {s}: got {got:?}, durable {} unsynced {:?}",
                    durable[s], unsynced[s]
                );
            }
        }
    }
}
