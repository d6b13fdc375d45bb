//! 001 sec. 3.3's benchmark on the flash emulator, timed in device time: the same (op, k, r)
//! points and timed syncs as [`super::bench`] runs on a file, so `wafer profile` gives the
//! emulated device's own cost terms. The emulator's closed loop of `timing.queue_depth`
//! commands stands for the k threads: k's shares of the region are accessed in turn, one
//! command per access (split at [`IO_BYTES_MAX`]), with the device at queue depth k; a point's
//! throughput is its bytes over the device time they took. Device time is deterministic, so a
//! point is a fixed number of pages rather than a wall time.
//!
//! The syncs are timed as on a file: one thread (queue depth 1) writes a run of n pages, and
//! once that write has completed issues a FLUSH; the sync's cost is the device time the flush
//! waited (`TimingReport::flush_wait_ns`).
use flashemu::{Config, Placement, Ssd, StoreKind, LBA_BYTES};

use super::bench::{IO_BYTES_MAX, SYNC_PAGES};
use super::{DeviceInfo, MqssdError, Op, Point, SyncPoint};
use crate::dist::Rng;
use crate::progress::Progress;

/// Timed syncs per size (device time is exact; repeats only vary the place written).
const SYNC_REPEATS: u64 = 8;
const PAGE_BYTES: u64 = LBA_BYTES;

/// The emulator benchmark's bounds, as a value.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuBenchOptions {
    /// The device, timing on; its queue depth is set per k.
    pub config: Config,
    /// What the profile calls the device (e.g. `emu:cns timing=chips`).
    pub name: String,
    /// The region shared out between the k threads (from LBA 0), at most the device.
    pub region_bytes: u64,
    pub ks: Vec<u32>,
    pub rs: Vec<f64>,
    /// Pages each point moves (at least one access per thread).
    pub pages_per_point: u64,
    pub seed: u64,
}

impl EmuBenchOptions {
    pub fn validate(&self) -> Result<(), MqssdError> {
        let bad = |why: String| Err(MqssdError::Options(why));
        if self.config.timing.is_off() {
            return bad("the emulator's timing is off: give --emu timing=chips (or mqssd)".into());
        }
        if self.ks.is_empty()
            || self.ks.iter().any(|&k| k == 0 || k > flashemu::timing::QUEUE_DEPTH_MAX)
        {
            return bad(format!(
                "thread counts must be in 1..={}",
                flashemu::timing::QUEUE_DEPTH_MAX
            ));
        }
        let k_max = u64::from(self.ks.iter().copied().max().unwrap_or(1));
        if self.region_bytes / k_max < PAGE_BYTES * 2 {
            return bad(format!(
                "{} bytes leave less than two pages per thread",
                self.region_bytes
            ));
        }
        if self.rs.len() < 2 || self.rs.iter().any(|&r| !(r > 0.0 && r <= 1.0)) {
            return bad("need at least two r values, each in (0, 1]".into());
        }
        if self.pages_per_point == 0 {
            return bad("pages per point must be at least 1".into());
        }
        Ok(())
    }

    pub fn info(&self) -> DeviceInfo {
        DeviceInfo {
            device: self.name.clone(),
            page_bytes: PAGE_BYTES,
            file_bytes: self.region_bytes,
            direct: true,
            // Points are bounded by pages, not by time.
            seconds_per_point: 0.0,
        }
    }

    /// The device at queue depth `k`, metadata only (a profile never reads data back), with
    /// its region written once so reads find flash pages and writes overwrite, as on a filled
    /// file.
    fn filled(&self, k: u32) -> Result<Ssd, MqssdError> {
        let mut config = self.config.clone();
        config.timing.queue_depth = k;
        config.store = StoreKind::None;
        let mut ssd = Ssd::new(config)?;
        let region_blocks = self.region_blocks(&ssd);
        let step = IO_BYTES_MAX / PAGE_BYTES;
        let mut lba = 0;
        while lba < region_blocks {
            let blocks = (region_blocks - lba).min(step);
            ssd.write(lba, blocks as u32, None, Placement::None)?;
            lba += blocks;
        }
        ssd.restart_timing_window();
        Ok(ssd)
    }

    fn region_blocks(&self, ssd: &Ssd) -> u64 {
        (self.region_bytes / PAGE_BYTES).min(ssd.logical_blocks())
    }
}

/// Every point of the plan, then the syncs. Progress counts points.
pub fn run(
    options: &EmuBenchOptions,
    progress: &mut dyn Progress,
) -> Result<(Vec<Point>, Vec<SyncPoint>), MqssdError> {
    options.validate()?;
    let total = options.ks.len() * 2 * options.rs.len();
    progress.start("profile", total as u64);
    let mut points = Vec::with_capacity(total);
    for &k in &options.ks {
        let mut ssd = options.filled(k)?;
        for op in [Op::Write, Op::Read] {
            for &r in &options.rs {
                let bytes_per_s = measure(&mut ssd, options, op, k, r)?;
                points.push(Point { op, k, r, bytes_per_s });
                let note = || format!("{op:?} k={k} r={r}: {:.1} MB/s", bytes_per_s / 1e6);
                progress.update(points.len() as u64, &note);
            }
        }
    }
    progress.finish();
    let syncs = measure_syncs(options)?;
    Ok((points, syncs))
}

/// One point on `ssd` (at queue depth k): bytes per device second.
fn measure(
    ssd: &mut Ssd,
    options: &EmuBenchOptions,
    op: Op,
    k: u32,
    r: f64,
) -> Result<f64, MqssdError> {
    let share_pages = options.region_blocks(ssd) / u64::from(k);
    let run_pages = ((1.0 / r).round() as u64).clamp(1, share_pages);
    let accesses = options.pages_per_point.div_ceil(run_pages).max(u64::from(k));
    let mut rng = Rng::new(options.seed ^ (u64::from(k) << 32) ^ r.to_bits());
    let mut buf = vec![0u8; (run_pages.min(IO_BYTES_MAX / PAGE_BYTES) * PAGE_BYTES) as usize];
    ssd.restart_timing_window();
    let mut bytes = 0u64;
    for access in 0..accesses {
        let thread = access % u64::from(k);
        let start = thread * share_pages + rng.below(share_pages - run_pages + 1);
        bytes += access_run(ssd, op, start, run_pages, &mut buf)?;
    }
    let device_ns = ssd.timing_report().map_or(0, |t| t.device_ns);
    Ok(bytes as f64 * 1e9 / device_ns.max(1) as f64)
}

/// One access: `pages` from `start`, one command per [`IO_BYTES_MAX`]. Returns its bytes.
fn access_run(
    ssd: &mut Ssd,
    op: Op,
    start: u64,
    pages: u64,
    buf: &mut [u8],
) -> Result<u64, MqssdError> {
    let step = buf.len() as u64 / PAGE_BYTES;
    let mut page = start;
    while page < start + pages {
        let blocks = (start + pages - page).min(step);
        match op {
            Op::Write => ssd.write(page, blocks as u32, None, Placement::None)?,
            Op::Read => ssd.read(page, &mut buf[..(blocks * PAGE_BYTES) as usize])?,
        }
        page += blocks;
    }
    Ok(pages * PAGE_BYTES)
}

/// The mean device time a FLUSH waited after one completed write of each of [`SYNC_PAGES`]
/// pages (one thread: queue depth 1), at random places in the region.
fn measure_syncs(options: &EmuBenchOptions) -> Result<Vec<SyncPoint>, MqssdError> {
    let mut ssd = options.filled(1)?;
    let region_blocks = options.region_blocks(&ssd);
    let mut rng = Rng::new(options.seed ^ 0x5_c0de);
    let mut syncs = Vec::with_capacity(SYNC_PAGES.len());
    let mut buf = vec![0u8; IO_BYTES_MAX as usize];
    for &wanted in &SYNC_PAGES {
        let pages = wanted.min(region_blocks).min(IO_BYTES_MAX / PAGE_BYTES);
        let waited = |ssd: &Ssd| ssd.timing_report().map_or(0, |t| t.flush_wait_ns);
        let before = waited(&ssd);
        for _ in 0..SYNC_REPEATS {
            let start = rng.below(region_blocks - pages + 1);
            access_run(&mut ssd, Op::Write, start, pages, &mut buf)?;
            ssd.flush()?;
        }
        let mean_ns = (waited(&ssd) - before) as f64 / SYNC_REPEATS as f64;
        syncs.push(SyncPoint { pages, us: mean_ns / 1e3 });
    }
    Ok(syncs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    fn options(timing: &str) -> EmuBenchOptions {
        let mut config = Config::preset("tiny").expect("preset");
        config.set("timing", timing).expect("timing");
        EmuBenchOptions {
            config,
            name: "emu:tiny".into(),
            region_bytes: 4 << 20,
            ks: vec![1, 4],
            rs: vec![0.1, 1.0],
            pages_per_point: 256,
            seed: 1,
        }
    }

    #[test]
    fn a_timed_emulator_profiles_every_point_and_its_syncs() {
        let (points, syncs) = run(&options("chips"), &mut Silent).expect("run");
        assert_eq!(points.len(), 8);
        assert!(points.iter().all(|p| p.bytes_per_s.is_finite() && p.bytes_per_s > 0.0));
        // Sequential beats random, and depth 4 beats depth 1, for writes and reads alike.
        let rate = |op, k, r| points.iter().find(|p| p.op == op && p.k == k && p.r == r);
        for op in [Op::Write, Op::Read] {
            let (seq, random) = (rate(op, 1, 0.1).expect("p"), rate(op, 1, 1.0).expect("p"));
            assert!(seq.bytes_per_s >= random.bytes_per_s, "{op:?} {points:?}");
            let deep = rate(op, 4, 1.0).expect("p");
            assert!(deep.bytes_per_s > random.bytes_per_s, "{op:?} {points:?}");
        }
        // A write at depth 1 has completed (its programs included) before the flush: the chip
        // model's flush then waits for nothing.
        let pages: Vec<u64> = syncs.iter().map(|s| s.pages).collect();
        assert_eq!(pages, [1, 16, 64, 256, 1024]);
        assert!(syncs.iter().all(|s| s.us == 0.0), "{syncs:?}");
    }

    #[test]
    fn an_untimed_emulator_is_refused() {
        let err = run(&options("off"), &mut Silent).expect_err("timing off");
        assert!(err.to_string().contains("timing=chips"), "{err}");
    }
}
