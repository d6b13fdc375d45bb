//! The log on the device layer's fault injector (`device::FaultDevice`): power cuts at every
//! point of a run, and failed writes and syncs (the log poisons itself and recovery finds the
//! truth).
use super::tests::{blocks, read_all, Rng};
use super::*;
use crate::device::{FaultDevice, IoKind};
use std::sync::Arc;

/// Appends and commits until the device fails; returns every record appended and the LSN below
/// which everything was acknowledged durable.
fn run_until_failure(wal: &Wal, rng: &mut Rng, steps: u32) -> (Vec<WalRecord>, Lsn) {
    let (mut appended, mut acked_end) = (Vec::new(), Lsn(0));
    for step in 0..steps {
        let payload = rng.payload(wal.options().max_payload_bytes());
        let Ok(lsn) = wal.append(step as u8, &payload) else { break };
        appended.push(WalRecord { lsn, kind: step as u8, payload });
        let durability = if rng.below(3) == 0 { Durability::None } else { Durability::Sync };
        match wal.commit(lsn, durability) {
            Ok(()) if durability == Durability::Sync => acked_end = Lsn(lsn.0 + 1),
            Ok(()) => {}
            Err(_) => break,
        }
    }
    (appended, acked_end)
}

fn check_recovered(seed: u64, device: Arc<FaultDevice>, appended: &[WalRecord], acked_end: Lsn) {
    let mut recovery = Wal::open(device, WalOptions::test_min())
        .unwrap_or_else(|e| panic!("seed {seed}: open: {e}"));
    let records = read_all(&mut recovery).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(records.len() <= appended.len(), "seed {seed}");
    assert_eq!(records[..], appended[..records.len()], "seed {seed}: not a prefix of the appends");
    let end = records.last().map_or(Lsn(0), |r| Lsn(r.lsn.0 + 1));
    assert!(end >= acked_end, "seed {seed}: acknowledged records lost ({end} < {acked_end})");
    recovery.finish().unwrap_or_else(|e| panic!("seed {seed}: finish: {e}"));
}

#[test]
fn power_cut_at_every_point_keeps_acknowledged_records() {
    let steps = 150;
    // A dry run counts the I/Os of the whole workload; then each run cuts the power at one of
    // them (every one for the first seed, random ones for the others).
    let dry = Arc::new(FaultDevice::new(blocks(400)));
    let wal = Wal::create(dry.clone(), WalOptions::test_min()).unwrap();
    let created_io = dry.io_count();
    run_until_failure(&wal, &mut Rng::new(0), steps);
    let total_io = dry.io_count();
    assert!(total_io > created_io + 50);
    for seed in 0..(total_io - created_io) {
        let device = Arc::new(FaultDevice::new(blocks(400)));
        let wal = Wal::create(device.clone(), WalOptions::test_min()).unwrap();
        let cut_at = created_io + seed;
        device.crash_at_io(cut_at);
        let (appended, acked_end) = run_until_failure(&wal, &mut Rng::new(0), steps);
        drop(wal);
        let image = Arc::new(device.power_cut(seed));
        check_recovered(seed, image, &appended, acked_end);
    }
}

#[test]
fn failed_sync_poisons_the_log_and_recovery_keeps_acknowledged_records() {
    for nth_sync in 1..30u64 {
        let device = Arc::new(FaultDevice::new(blocks(400)));
        let wal = Wal::create(device.clone(), WalOptions::test_min()).unwrap();
        device.fail_nth(IoKind::Sync, nth_sync);
        let (appended, acked_end) = run_until_failure(&wal, &mut Rng::new(nth_sync), 200);
        // After the failure every call refuses: what reached the media is unknown.
        assert!(matches!(wal.append(0, b"more"), Err(WalError::Poisoned)), "sync {nth_sync}");
        assert!(matches!(wal.flush(), Err(WalError::Poisoned)), "sync {nth_sync}");
        drop(wal);
        device.clear_faults();
        // The unsynced writes may or may not have reached the media; either way the recovered
        // log is a prefix with every acknowledged record.
        check_recovered(nth_sync, Arc::new(device.power_cut(nth_sync)), &appended, acked_end);
    }
}

#[test]
fn failed_write_is_reported_to_the_committer_and_not_acknowledged() {
    let device = Arc::new(FaultDevice::new(blocks(400)));
    let wal = Wal::create(device.clone(), WalOptions::test_min()).unwrap();
    let a = wal.append(1, b"acknowledged").unwrap();
    wal.commit(a, Durability::Sync).unwrap();
    device.fail_nth(IoKind::Write, device.io_count_of(IoKind::Write));
    let b = wal.append(1, b"not acknowledged").unwrap();
    assert!(matches!(wal.commit(b, Durability::Sync), Err(WalError::Device(_))));
    assert!(wal.durable_lsn() <= b);
    drop(wal);
    device.clear_faults();
    let mut recovery = Wal::open(device, WalOptions::test_min()).unwrap();
    let records = read_all(&mut recovery).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].payload, b"acknowledged");
}
