//! Plain cumulative counters a runner snapshots at each sample point. No engine types here:
//! the runner fills them from `wafer::stats::IoSnapshot` and `flashemu::Counters` (see
//! [`super::sources`]) or from anything else that counts the same things.

/// Cumulative counters at one instant, since the start of the run (or any fixed origin: only
/// differences and ratios are reported). All byte counts are bytes the layer issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct CounterSnapshot {
    /// Monotonic time since the run's origin.
    pub time_ns: u64,
    /// Operations completed.
    pub ops: u64,
    /// User page writes (eviction + checkpoint) as the device received them (compressed and
    /// packed out of place with compression).
    pub user_bytes: u64,
    /// The same pages as the page store received them, before any transformation: the
    /// denominator of DB WAF (docs/design.md). 0 when the target does not count them
    /// (then `user_bytes` serves).
    #[serde(default)]
    pub logical_user_bytes: u64,
    pub doublewrite_bytes: u64,
    /// DB GC copyback.
    pub gc_copy_bytes: u64,
    /// NoWA compensation writes.
    pub compensation_bytes: u64,
    pub padding_bytes: u64,
    pub metadata_bytes: u64,
    /// Write-ahead log: reported, outside the WAF figures (000 sec. 7).
    pub wal_bytes: u64,
    /// Of `user_bytes`: values written out of line (blob pages, as the device received them).
    pub blob_bytes: u64,
    /// Blob pages DB GC moved (counted in `gc_copy_bytes`), and blob pages read back.
    pub blob_gc_pages: u64,
    pub blob_pages_read: u64,
    /// Of `blob_pages_read`: answered by the cache of stored bytes, no device read.
    pub blob_cache_hits: u64,
    /// What only the log knows of `wal_bytes`: records appended, their payload bytes (record
    /// and block headers left out), and the unused tails of blocks closed by a flush.
    pub wal_records: u64,
    pub wal_payload_bytes: u64,
    pub wal_padding_bytes: u64,
    /// Bytes the DB read from the data device.
    pub db_read_bytes: u64,
    /// False when no flash counters exist (a real file device): SSD and total WAF are null.
    pub flash_measured: bool,
    /// Flash programmed for host writes.
    pub flash_host_bytes: u64,
    /// Flash programmed by SSD GC copies.
    pub ssd_gc_bytes: u64,
    /// Flash programmed as padding.
    pub flash_padding_bytes: u64,
    pub buffer_hits: u64,
    pub buffer_misses: u64,
    /// Process CPU time (getrusage), user and system.
    pub cpu_user_ns: u64,
    pub cpu_system_ns: u64,
    /// Resident memory now (a gauge, not a counter: intervals report the latest value).
    pub rss_bytes: u64,
    /// DB GC victims chosen, and the sums of their valid slots and of their sizes in slots
    /// at choice time (out of place; 0 otherwise).
    #[serde(default)]
    pub gc_victims: u64,
    #[serde(default)]
    pub gc_victim_valid_slots: u64,
    #[serde(default)]
    pub gc_victim_slots: u64,
    /// Sum of the victims' live bytes at choice time (per page: a packed slot is valid while
    /// any of its pages lives).
    #[serde(default)]
    pub gc_victim_live_bytes: u64,
    /// Gauges of the out-of-place space: live pages, slots of all zones, and the data device
    /// bytes on-device metadata takes, with the device's capacity (0 in place).
    #[serde(default)]
    pub live_pages: u64,
    #[serde(default)]
    pub zone_slots: u64,
    #[serde(default)]
    pub metadata_device_bytes: u64,
    #[serde(default)]
    pub device_capacity_bytes: u64,
    /// Page compression (out of place): pages handed to the codec and the bytes they are
    /// stored as, time in compression and decompression, page reads the store served and the
    /// device reads they took, slot bytes appended and the stored page bytes in them.
    #[serde(default)]
    pub codec_pages_in: u64,
    #[serde(default)]
    pub codec_bytes_stored: u64,
    #[serde(default)]
    pub compress_ns: u64,
    #[serde(default)]
    pub decompress_ns: u64,
    #[serde(default)]
    pub store_page_reads: u64,
    #[serde(default)]
    pub store_device_reads: u64,
    #[serde(default)]
    pub slot_bytes: u64,
    #[serde(default)]
    pub packed_bytes: u64,
    /// DB GC victims by valid ratio (`wafer::internals::space::VALID_RATIO_BINS` equal bins over [0, 1]).
    #[serde(default)]
    pub gc_victim_valid_hist: [u64; VICTIM_VALID_BINS],
    /// Deathtime predictions scored (GDT): deaths observed, those within 2x of the predicted
    /// lifetime, the sum of |observed - predicted| death times and of observed lifetimes.
    #[serde(default)]
    pub edt_predictions: u64,
    #[serde(default)]
    pub edt_within_2x: u64,
    #[serde(default)]
    pub edt_abs_error_sum: u64,
    #[serde(default)]
    pub edt_observed_lifetime_sum: u64,
    /// The emulator's device time, when it is timed (`[timing]`, `--emu timing=...`): false
    /// elsewhere, and then the device figures are null. `device_ns` is the device clock (the
    /// end of the last command), `device_flushes` the FLUSH commands and `device_flush_wait_ns`
    /// the device time they waited for the commands before them.
    #[serde(default)]
    pub device_time_measured: bool,
    #[serde(default)]
    pub device_ns: u64,
    #[serde(default)]
    pub device_flushes: u64,
    #[serde(default)]
    pub device_flush_wait_ns: u64,
}

/// Bins of [`CounterSnapshot::gc_victim_valid_hist`].
pub const VICTIM_VALID_BINS: usize = 20;

impl CounterSnapshot {
    /// Every byte the DB wrote to the data device: user + doublewrite + GC copy +
    /// compensation + padding + metadata (WAL excluded).
    pub fn db_issued_bytes(&self) -> u64 {
        self.user_bytes
            + self.doublewrite_bytes
            + self.gc_copy_bytes
            + self.compensation_bytes
            + self.padding_bytes
            + self.metadata_bytes
    }

    /// Every byte programmed to flash.
    pub fn flash_bytes(&self) -> u64 {
        self.flash_host_bytes + self.ssd_gc_bytes + self.flash_padding_bytes
    }

    /// Counters accumulated between `earlier` and `self`; gauges keep `self`'s value.
    /// Counters never go backwards; if a caller's do (a reset), the difference saturates at 0.
    pub fn since(&self, earlier: &CounterSnapshot) -> CounterSnapshot {
        debug_assert!(self.time_ns >= earlier.time_ns, "time went backwards");
        let d = |now: u64, then: u64| now.saturating_sub(then);
        CounterSnapshot {
            time_ns: d(self.time_ns, earlier.time_ns),
            ops: d(self.ops, earlier.ops),
            user_bytes: d(self.user_bytes, earlier.user_bytes),
            logical_user_bytes: d(self.logical_user_bytes, earlier.logical_user_bytes),
            doublewrite_bytes: d(self.doublewrite_bytes, earlier.doublewrite_bytes),
            gc_copy_bytes: d(self.gc_copy_bytes, earlier.gc_copy_bytes),
            compensation_bytes: d(self.compensation_bytes, earlier.compensation_bytes),
            padding_bytes: d(self.padding_bytes, earlier.padding_bytes),
            metadata_bytes: d(self.metadata_bytes, earlier.metadata_bytes),
            wal_bytes: d(self.wal_bytes, earlier.wal_bytes),
            blob_bytes: d(self.blob_bytes, earlier.blob_bytes),
            blob_gc_pages: d(self.blob_gc_pages, earlier.blob_gc_pages),
            blob_pages_read: d(self.blob_pages_read, earlier.blob_pages_read),
            blob_cache_hits: d(self.blob_cache_hits, earlier.blob_cache_hits),
            wal_records: d(self.wal_records, earlier.wal_records),
            wal_payload_bytes: d(self.wal_payload_bytes, earlier.wal_payload_bytes),
            wal_padding_bytes: d(self.wal_padding_bytes, earlier.wal_padding_bytes),
            db_read_bytes: d(self.db_read_bytes, earlier.db_read_bytes),
            flash_measured: self.flash_measured && earlier.flash_measured,
            flash_host_bytes: d(self.flash_host_bytes, earlier.flash_host_bytes),
            ssd_gc_bytes: d(self.ssd_gc_bytes, earlier.ssd_gc_bytes),
            flash_padding_bytes: d(self.flash_padding_bytes, earlier.flash_padding_bytes),
            buffer_hits: d(self.buffer_hits, earlier.buffer_hits),
            buffer_misses: d(self.buffer_misses, earlier.buffer_misses),
            cpu_user_ns: d(self.cpu_user_ns, earlier.cpu_user_ns),
            cpu_system_ns: d(self.cpu_system_ns, earlier.cpu_system_ns),
            rss_bytes: self.rss_bytes,
            gc_victims: d(self.gc_victims, earlier.gc_victims),
            gc_victim_valid_slots: d(self.gc_victim_valid_slots, earlier.gc_victim_valid_slots),
            gc_victim_slots: d(self.gc_victim_slots, earlier.gc_victim_slots),
            gc_victim_live_bytes: d(self.gc_victim_live_bytes, earlier.gc_victim_live_bytes),
            live_pages: self.live_pages,
            zone_slots: self.zone_slots,
            metadata_device_bytes: self.metadata_device_bytes,
            device_capacity_bytes: self.device_capacity_bytes,
            codec_pages_in: d(self.codec_pages_in, earlier.codec_pages_in),
            codec_bytes_stored: d(self.codec_bytes_stored, earlier.codec_bytes_stored),
            compress_ns: d(self.compress_ns, earlier.compress_ns),
            decompress_ns: d(self.decompress_ns, earlier.decompress_ns),
            store_page_reads: d(self.store_page_reads, earlier.store_page_reads),
            store_device_reads: d(self.store_device_reads, earlier.store_device_reads),
            slot_bytes: d(self.slot_bytes, earlier.slot_bytes),
            packed_bytes: d(self.packed_bytes, earlier.packed_bytes),
            gc_victim_valid_hist: std::array::from_fn(|i| {
                d(self.gc_victim_valid_hist[i], earlier.gc_victim_valid_hist[i])
            }),
            edt_predictions: d(self.edt_predictions, earlier.edt_predictions),
            edt_within_2x: d(self.edt_within_2x, earlier.edt_within_2x),
            edt_abs_error_sum: d(self.edt_abs_error_sum, earlier.edt_abs_error_sum),
            edt_observed_lifetime_sum: d(
                self.edt_observed_lifetime_sum,
                earlier.edt_observed_lifetime_sum,
            ),
            device_time_measured: self.device_time_measured && earlier.device_time_measured,
            device_ns: d(self.device_ns, earlier.device_ns),
            device_flushes: d(self.device_flushes, earlier.device_flushes),
            device_flush_wait_ns: d(self.device_flush_wait_ns, earlier.device_flush_wait_ns),
        }
    }
}

/// CPU time and resident memory of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessSample {
    pub cpu_user_ns: u64,
    pub cpu_system_ns: u64,
    pub rss_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("getrusage failed: {0}")]
    Rusage(std::io::Error),
    #[error("reading /proc/self/statm: {0}")]
    Statm(std::io::Error),
    #[error("unexpected /proc/self/statm contents {0:?}")]
    StatmFormat(String),
}

impl ProcessSample {
    /// CPU time from getrusage(RUSAGE_SELF), resident set from /proc/self/statm.
    pub fn now() -> Result<ProcessSample, ProcessError> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a full `rusage` into the pointer we pass, which points to
        // zeroed memory of exactly that type; we read it only after checking the return code.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return Err(ProcessError::Rusage(std::io::Error::last_os_error()));
        }
        // SAFETY: zero-initialized, and fully written by a successful getrusage.
        let usage = unsafe { usage.assume_init() };
        let tv_ns = |tv: libc::timeval| {
            (tv.tv_sec.max(0) as u64) * 1_000_000_000 + (tv.tv_usec.max(0) as u64) * 1000
        };
        let statm = std::fs::read_to_string("/proc/self/statm").map_err(ProcessError::Statm)?;
        let rss_pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| ProcessError::StatmFormat(statm.clone()))?;
        // SAFETY: sysconf has no memory-safety preconditions.
        let page_bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page_bytes = if page_bytes > 0 { page_bytes as u64 } else { 4096 };
        Ok(ProcessSample {
            cpu_user_ns: tv_ns(usage.ru_utime),
            cpu_system_ns: tv_ns(usage.ru_stime),
            rss_bytes: rss_pages * page_bytes,
        })
    }

    /// Copy into a snapshot's process fields.
    pub fn apply(&self, snapshot: &mut CounterSnapshot) {
        snapshot.cpu_user_ns = self.cpu_user_ns;
        snapshot.cpu_system_ns = self.cpu_system_ns;
        snapshot.rss_bytes = self.rss_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_sample_is_plausible() {
        let a = ProcessSample::now().unwrap();
        // Burn a little CPU so user time can only grow.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = ProcessSample::now().unwrap();
        assert!(b.cpu_user_ns + b.cpu_system_ns >= a.cpu_user_ns + a.cpu_system_ns);
        assert!(b.rss_bytes > 1 << 20, "rss {}", b.rss_bytes);
    }
}
