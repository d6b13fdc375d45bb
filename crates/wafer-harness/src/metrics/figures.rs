//! The figures every report prints, computed from one counter difference so they agree by
//! construction: `total_waf = db_waf * ssd_waf` (both from the same byte counters) and
//! `x_bytes_per_op * ops = x_bytes`. Ratios with a zero denominator are `None` (JSON null),
//! never NaN or infinity.

use super::counters::{CounterSnapshot, VICTIM_VALID_BINS};

/// Bytes by purpose over the period (docs/design.md, "Write amplification").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BytesByPurpose {
    /// User pages as the device received them (compressed when compression is on).
    pub user: u64,
    /// User pages as the page store received them (uncompressed): DB WAF's denominator.
    #[serde(default)]
    pub logical_user: u64,
    pub doublewrite: u64,
    pub gc_copy: u64,
    pub compensation: u64,
    pub padding: u64,
    pub metadata: u64,
    /// user + doublewrite + gc_copy + compensation + padding + metadata.
    pub db_issued: u64,
    pub wal: u64,
    /// Of `user`: values written out of line (blob pages as the device received them).
    #[serde(default)]
    pub blob: u64,
    /// Blob pages DB GC moved (their bytes are in `gc_copy`) and blob pages read back.
    #[serde(default)]
    pub blob_gc_pages: u64,
    #[serde(default)]
    pub blob_pages_read: u64,
    /// Of `blob_pages_read`: those the store's cache of stored bytes answered.
    #[serde(default)]
    pub blob_cache_hits: u64,
    /// Of `wal`: records appended (a count), their payload bytes, and the unused tails of
    /// blocks a flush closed.
    #[serde(default)]
    pub wal_records: u64,
    #[serde(default)]
    pub wal_payload: u64,
    #[serde(default)]
    pub wal_padding: u64,
    pub db_read: u64,
    pub flash_host: u64,
    pub ssd_gc: u64,
    pub flash_padding: u64,
    /// flash_host + ssd_gc + flash_padding.
    pub flash: u64,
}

/// Figures over one period (an interval, or the run so far).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Figures {
    pub elapsed_s: f64,
    pub ops: u64,
    pub ops_per_sec: Option<f64>,
    pub bytes: BytesByPurpose,
    /// db_issued / logical_user.
    pub db_waf: Option<f64>,
    /// DB WAF as 000's artifact prints it (ZLeanStore `src/leanstore.cc`): out of place
    /// `1 / (1 - v) * c`, v the GC victims' live share per page and c the device's user bytes
    /// over their uncompressed bytes; in place its constant, 2 with a doublewrite buffer and 1
    /// without. It counts what GC must copy per victim, not the bytes issued, so slack,
    /// padding and metadata stay out. None out of place before the first victim.
    #[serde(default)]
    pub db_waf_victim: Option<f64>,
    /// flash / db_issued; None without flash counters.
    pub ssd_waf: Option<f64>,
    /// db_waf * ssd_waf (= flash / logical_user).
    pub total_waf: Option<f64>,
    /// db_issued / ops.
    pub logical_bytes_per_op: Option<f64>,
    /// flash / ops.
    pub physical_bytes_per_op: Option<f64>,
    /// user / ops.
    pub user_bytes_per_op: Option<f64>,
    /// wal / ops.
    pub wal_bytes_per_op: Option<f64>,
    /// hits / (hits + misses).
    pub buffer_hit_ratio: Option<f64>,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// (user + system CPU seconds) / elapsed seconds: cores kept busy on average.
    pub cpu_cores: Option<f64>,
    /// Resident memory at the end of the period.
    pub rss_bytes: u64,
    /// Mean valid ratio of the DB GC victims chosen in the period (out of place; 000 sec. 7.3
    /// reports about 75% for its naive row).
    #[serde(default)]
    pub gc_victim_valid_ratio: Option<f64>,
    /// The same per page: the victims' live bytes over their bytes (with packing a slot stays
    /// valid while any of its pages lives, so the slot ratio overstates what GC copies).
    #[serde(default)]
    pub gc_victim_live_ratio: Option<f64>,
    #[serde(default)]
    pub gc_victims: u64,
    /// Live pages / slots of all zones at the end of the period: the utilization DB GC works
    /// at (out of place).
    #[serde(default)]
    pub live_pages_per_zone_slot: Option<f64>,
    /// Share of the data device on-device metadata takes (out of place).
    #[serde(default)]
    pub metadata_device_share: Option<f64>,
    /// Stored bytes / page bytes of the pages compressed in the period (000 sec. 3.1: LZ4
    /// stores YCSB at about 0.41); null without compression.
    #[serde(default)]
    pub compression_ratio: Option<f64>,
    /// Device reads per page read the store served (1.00 when every page lies in one slot).
    #[serde(default)]
    pub reads_per_page_read: Option<f64>,
    /// Slot bytes appended that hold no page (packing slack), per operation.
    #[serde(default)]
    pub slack_bytes_per_op: Option<f64>,
    /// Seconds spent compressing and decompressing pages.
    #[serde(default)]
    pub compress_s: f64,
    #[serde(default)]
    pub decompress_s: f64,
    /// CDF of the DB GC victims' valid ratio in the period (000 Figure 13a): entry i is the
    /// share of victims whose valid ratio is below (i + 1) / 20 (the last: at most 1); null
    /// without victims.
    #[serde(default)]
    pub gc_victim_valid_cdf: Option<[f64; VICTIM_VALID_BINS]>,
    /// Deathtime predictions (GDT): share of observed deaths within 2x of the predicted
    /// lifetime, and the mean |observed - predicted| death time over the mean observed
    /// lifetime; null without predictions.
    #[serde(default)]
    pub edt_within_2x: Option<f64>,
    #[serde(default)]
    pub edt_error_ratio: Option<f64>,
    /// The emulator's device time over the period (seconds) and operations per device second,
    /// beside the wall-clock `elapsed_s` and `ops_per_sec`; null unless the device is the
    /// emulator with timing on (a period without device time has no rate either).
    #[serde(default)]
    pub device_s: Option<f64>,
    #[serde(default)]
    pub device_ops_per_sec: Option<f64>,
    /// FLUSH commands in the period and the device seconds they waited for the commands
    /// before them (null without device time).
    #[serde(default)]
    pub device_flushes: Option<u64>,
    #[serde(default)]
    pub device_flush_wait_s: Option<f64>,
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// 000's artifact's DB WAF (see [`Figures::db_waf_victim`]). Zone slots tell out of place from
/// in place; a victim entirely live has no finite figure.
fn victim_db_waf(d: &CounterSnapshot, logical_user: u64) -> Option<f64> {
    if d.zone_slots == 0 {
        let written = d.user_bytes > 0 || logical_user > 0;
        return written.then_some(if d.doublewrite_bytes > 0 { 2.0 } else { 1.0 });
    }
    let live = ratio(d.gc_victim_live_bytes, d.gc_victim_slots * 4096)?;
    let compression = ratio(d.user_bytes, logical_user)?;
    (live < 1.0).then(|| compression / (1.0 - live))
}

/// The victims' valid-ratio CDF of a histogram of equal bins over [0, 1].
fn victim_cdf(hist: &[u64; VICTIM_VALID_BINS]) -> Option<[f64; VICTIM_VALID_BINS]> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let mut cumulative = 0u64;
    Some(std::array::from_fn(|i| {
        cumulative += hist[i];
        cumulative as f64 / total as f64
    }))
}

impl Figures {
    /// Figures of a counter difference (`later.since(&earlier)`) or of totals.
    pub fn from_delta(d: &CounterSnapshot) -> Figures {
        let db_issued = d.db_issued_bytes();
        let flash = d.flash_bytes();
        // Targets without a store-boundary count: the device's user bytes are the logical ones.
        let logical_user =
            if d.logical_user_bytes > 0 { d.logical_user_bytes } else { d.user_bytes };
        let bytes = BytesByPurpose {
            user: d.user_bytes,
            logical_user,
            doublewrite: d.doublewrite_bytes,
            gc_copy: d.gc_copy_bytes,
            compensation: d.compensation_bytes,
            padding: d.padding_bytes,
            metadata: d.metadata_bytes,
            db_issued,
            wal: d.wal_bytes,
            blob: d.blob_bytes,
            blob_gc_pages: d.blob_gc_pages,
            blob_pages_read: d.blob_pages_read,
            blob_cache_hits: d.blob_cache_hits,
            wal_records: d.wal_records,
            wal_payload: d.wal_payload_bytes,
            wal_padding: d.wal_padding_bytes,
            db_read: d.db_read_bytes,
            flash_host: d.flash_host_bytes,
            ssd_gc: d.ssd_gc_bytes,
            flash_padding: d.flash_padding_bytes,
            flash,
        };
        let elapsed_s = d.time_ns as f64 / 1e9;
        let db_waf = ratio(db_issued, logical_user);
        let ssd_waf = if d.flash_measured { ratio(flash, db_issued) } else { None };
        let total_waf = match (db_waf, ssd_waf) {
            (Some(db), Some(ssd)) => Some(db * ssd),
            _ => None,
        };
        let cpu_s = (d.cpu_user_ns + d.cpu_system_ns) as f64 / 1e9;
        Figures {
            elapsed_s,
            ops: d.ops,
            ops_per_sec: (d.time_ns > 0).then(|| d.ops as f64 / elapsed_s),
            bytes,
            db_waf,
            db_waf_victim: victim_db_waf(d, logical_user),
            ssd_waf,
            total_waf,
            logical_bytes_per_op: ratio(db_issued, d.ops),
            physical_bytes_per_op: if d.flash_measured { ratio(flash, d.ops) } else { None },
            user_bytes_per_op: ratio(d.user_bytes, d.ops),
            wal_bytes_per_op: ratio(d.wal_bytes, d.ops),
            buffer_hit_ratio: ratio(d.buffer_hits, d.buffer_hits + d.buffer_misses),
            cpu_user_s: d.cpu_user_ns as f64 / 1e9,
            cpu_system_s: d.cpu_system_ns as f64 / 1e9,
            cpu_cores: (d.time_ns > 0).then(|| cpu_s / elapsed_s),
            rss_bytes: d.rss_bytes,
            gc_victim_valid_ratio: ratio(d.gc_victim_valid_slots, d.gc_victim_slots),
            gc_victim_live_ratio: ratio(d.gc_victim_live_bytes, d.gc_victim_slots * 4096),
            gc_victims: d.gc_victims,
            live_pages_per_zone_slot: ratio(d.live_pages, d.zone_slots),
            metadata_device_share: (d.zone_slots > 0)
                .then(|| d.metadata_device_bytes as f64 / d.device_capacity_bytes.max(1) as f64),
            compression_ratio: ratio(d.codec_bytes_stored, d.codec_pages_in * 4096),
            reads_per_page_read: ratio(d.store_device_reads, d.store_page_reads),
            slack_bytes_per_op: (d.slot_bytes > 0)
                .then(|| d.slot_bytes.saturating_sub(d.packed_bytes) as f64 / d.ops.max(1) as f64),
            compress_s: d.compress_ns as f64 / 1e9,
            decompress_s: d.decompress_ns as f64 / 1e9,
            gc_victim_valid_cdf: victim_cdf(&d.gc_victim_valid_hist),
            edt_within_2x: ratio(d.edt_within_2x, d.edt_predictions),
            edt_error_ratio: ratio(d.edt_abs_error_sum, d.edt_observed_lifetime_sum),
            device_s: d.device_time_measured.then(|| d.device_ns as f64 / 1e9),
            device_ops_per_sec: (d.device_time_measured && d.device_ns > 0)
                .then(|| d.ops as f64 * 1e9 / d.device_ns as f64),
            device_flushes: d.device_time_measured.then_some(d.device_flushes),
            device_flush_wait_s: d
                .device_time_measured
                .then(|| d.device_flush_wait_ns as f64 / 1e9),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafer_workloads::dist::Rng;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn consistent_by_construction() {
        let seed = 4242;
        let mut rng = Rng::new(seed);
        for _ in 0..1000 {
            let mut r = |max: u64| rng.below(max);
            let d = CounterSnapshot {
                time_ns: 1 + r(1 << 40),
                ops: 1 + r(1 << 30),
                user_bytes: 1 + r(1 << 40),
                doublewrite_bytes: r(1 << 40),
                gc_copy_bytes: r(1 << 40),
                compensation_bytes: r(1 << 30),
                padding_bytes: r(1 << 30),
                metadata_bytes: r(1 << 20),
                wal_bytes: r(1 << 40),
                db_read_bytes: r(1 << 40),
                flash_measured: true,
                flash_host_bytes: 1 + r(1 << 40),
                ssd_gc_bytes: r(1 << 40),
                flash_padding_bytes: r(1 << 20),
                buffer_hits: r(1 << 30),
                buffer_misses: 1 + r(1 << 30),
                cpu_user_ns: r(1 << 40),
                cpu_system_ns: r(1 << 40),
                rss_bytes: r(1 << 40),
                gc_victims: r(1 << 20),
                gc_victim_valid_slots: r(1 << 30),
                gc_victim_slots: 1 + (1 << 30) + r(1 << 30),
                gc_victim_live_bytes: r(1 << 40),
                live_pages: r(1 << 30),
                zone_slots: 1 + (1 << 30) + r(1 << 30),
                metadata_device_bytes: r(1 << 30),
                device_capacity_bytes: 1 + (1 << 40),
                ..CounterSnapshot::default()
            };
            let f = Figures::from_delta(&d);
            for share in [
                f.gc_victim_valid_ratio,
                f.gc_victim_live_ratio,
                f.live_pages_per_zone_slot,
                f.metadata_device_share,
            ] {
                assert!(share.is_some_and(|v| (0.0..1.0).contains(&v)), "seed {seed}: {share:?}");
            }
            let (db, ssd, total) = (f.db_waf.unwrap(), f.ssd_waf.unwrap(), f.total_waf.unwrap());
            assert!(close(total, db * ssd), "seed {seed}");
            let direct = f.bytes.flash as f64 / f.bytes.user as f64;
            assert!(close(total, direct), "seed {seed}: {total} vs flash/user {direct}");
            let ops = f.ops as f64;
            assert!(close(f.logical_bytes_per_op.unwrap() * ops, f.bytes.db_issued as f64));
            assert!(close(f.physical_bytes_per_op.unwrap() * ops, f.bytes.flash as f64));
            assert!(close(f.user_bytes_per_op.unwrap() * ops, f.bytes.user as f64));
            assert!(close(f.ops_per_sec.unwrap() * f.elapsed_s, ops));
            let parts = f.bytes.user
                + f.bytes.doublewrite
                + f.bytes.gc_copy
                + f.bytes.compensation
                + f.bytes.padding
                + f.bytes.metadata;
            assert_eq!(parts, f.bytes.db_issued);
            assert_eq!(f.bytes.flash_host + f.bytes.ssd_gc + f.bytes.flash_padding, f.bytes.flash);
            let hr = f.buffer_hit_ratio.unwrap();
            assert!((0.0..=1.0).contains(&hr));
        }
    }

    #[test]
    fn zero_denominators_are_null() {
        let f = Figures::from_delta(&CounterSnapshot::default());
        assert_eq!(f.db_waf, None);
        assert_eq!(f.ssd_waf, None);
        assert_eq!(f.total_waf, None);
        assert_eq!(f.ops_per_sec, None);
        assert_eq!(f.buffer_hit_ratio, None);
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains("\"db_waf\":null"), "{json}");
        // Without flash counters SSD and total WAF stay null even with writes.
        let d =
            CounterSnapshot { user_bytes: 10, flash_host_bytes: 10, ..CounterSnapshot::default() };
        let f = Figures::from_delta(&d);
        assert_eq!(f.db_waf, Some(1.0));
        assert_eq!(f.total_waf, None);
    }

    #[test]
    fn victim_db_waf_is_the_artifacts_formula() {
        // Out of place: victims 3/4 live per page, user pages stored at half their size.
        let d = CounterSnapshot {
            user_bytes: 500,
            logical_user_bytes: 1000,
            gc_copy_bytes: 10_000,
            gc_victims: 2,
            gc_victim_slots: 8,
            gc_victim_live_bytes: 6 * 4096,
            zone_slots: 64,
            ..CounterSnapshot::default()
        };
        let f = Figures::from_delta(&d);
        assert!(close(f.db_waf_victim.unwrap(), 0.5 / 0.25), "{:?}", f.db_waf_victim);
        // No victim yet: no figure; in place: the artifact's constants.
        let none = CounterSnapshot { gc_victims: 0, gc_victim_slots: 0, ..d };
        assert_eq!(Figures::from_delta(&none).db_waf_victim, None);
        let in_place = CounterSnapshot { user_bytes: 10, ..CounterSnapshot::default() };
        assert_eq!(Figures::from_delta(&in_place).db_waf_victim, Some(1.0));
        let dwb = CounterSnapshot { doublewrite_bytes: 10, ..in_place };
        assert_eq!(Figures::from_delta(&dwb).db_waf_victim, Some(2.0));
    }
}
