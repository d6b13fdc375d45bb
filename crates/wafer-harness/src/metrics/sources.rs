//! Filling [`CounterSnapshot`] from the engine's and the emulator's own counters. The metrics
//! types stay plain numbers; this is the one place that knows both sides' field names.

use flashemu::{Counters, TimingReport};
use wafer::device::WritePurpose;
use wafer::stats::IoSnapshot;

use super::counters::CounterSnapshot;

/// Copy the DB-side byte counters (by purpose) into `snapshot`.
pub fn apply_io_snapshot(io: &IoSnapshot, snapshot: &mut CounterSnapshot) {
    snapshot.user_bytes = io.user_bytes();
    snapshot.doublewrite_bytes = io.bytes(WritePurpose::Doublewrite);
    snapshot.gc_copy_bytes = io.bytes(WritePurpose::GcCopy);
    snapshot.compensation_bytes = io.bytes(WritePurpose::Compensation);
    snapshot.padding_bytes = io.bytes(WritePurpose::Padding);
    snapshot.metadata_bytes = io.bytes(WritePurpose::Metadata);
    snapshot.wal_bytes = io.bytes(WritePurpose::Wal);
    snapshot.blob_bytes = io.bytes(WritePurpose::Blob);
    snapshot.db_read_bytes = io.read_bytes;
}

/// Copy the emulator's device clock and flushes into `snapshot` (its timing is on).
pub fn apply_flash_timing(timing: &TimingReport, snapshot: &mut CounterSnapshot) {
    snapshot.device_time_measured = true;
    snapshot.device_ns = timing.device_ns;
    snapshot.device_flushes = timing.flushes;
    snapshot.device_flush_wait_ns = timing.flush_wait_ns;
}

/// Copy the emulator's flash program counters into `snapshot`.
pub fn apply_flash_counters(flash: &Counters, snapshot: &mut CounterSnapshot) {
    snapshot.flash_measured = true;
    snapshot.flash_host_bytes = flash.flash_host_bytes;
    snapshot.ssd_gc_bytes = flash.flash_gc_bytes;
    snapshot.flash_padding_bytes = flash.flash_pad_bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_issued_matches_engine_definition() {
        let mut io = IoSnapshot::default();
        for (i, p) in WritePurpose::ALL.iter().enumerate() {
            io.write_bytes[*p as usize] = 4096 * (i as u64 + 1);
        }
        let mut s = CounterSnapshot::default();
        apply_io_snapshot(&io, &mut s);
        assert_eq!(s.user_bytes, io.user_bytes());
        assert_eq!(s.db_issued_bytes(), io.db_issued_bytes());
        assert_eq!(s.wal_bytes, io.bytes(WritePurpose::Wal));
    }
}
