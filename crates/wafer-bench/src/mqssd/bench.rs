//! 001 sec. 3.3's file benchmark: k threads, each reading or writing its own share of an N-byte
//! file, with a fraction r of the pages starting a random access. A share is covered by accesses
//! of 1/r pages each (r = 1: every page is random; r = 0.001: runs of 1000 pages) at uniformly
//! random page offsets, each access one positional I/O (split at [`IO_BYTES_MAX`]).
//!
//! Bounded: every point runs for a fixed wall time, the file is N bytes, and the loops count.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wafer::device::{AlignedBuf, Device, FileDevice, FileOptions, WritePurpose};

use super::{DeviceInfo, MqssdError, Op, Point, SyncPoint};
use crate::dist::Rng;
use crate::progress::Progress;

/// Largest single I/O: a long sequential run is issued in pieces of this size.
pub const IO_BYTES_MAX: u64 = 4 << 20;
/// Threads at most: far above any device's useful concurrency, and a bound on spawned threads.
pub const THREADS_MAX: u32 = 1024;
/// Accesses a thread makes at most per point, whatever the time limit says.
const ACCESSES_MAX: u64 = 1 << 32;
/// Pages written before each timed fdatasync: from one page to past the doublewrite area's 255
/// slots, the batch sizes the engine syncs after.
pub const SYNC_PAGES: [u64; 5] = [1, 16, 64, 256, 1024];
/// Timed syncs per size. Their mean is kept, not the median: a batch pays the expected
/// latency, and on a shared virtual disk one flush takes anything from 0.05 to 4 ms.
const SYNC_REPEATS: usize = 40;

/// The benchmark's bounds, as a value.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    pub path: PathBuf,
    /// N: the file size, shared out between the k threads.
    pub file_bytes: u64,
    /// Thread counts, e.g. 1, 2, 4, 8.
    pub ks: Vec<u32>,
    /// Random fractions, each in (0, 1].
    pub rs: Vec<f64>,
    pub seconds_per_point: f64,
    pub page_bytes: u64,
    /// O_DIRECT (001's setup); off only for filesystems that refuse it.
    pub direct: bool,
    /// Overwrite an existing non-empty file or a block device.
    pub force: bool,
    pub seed: u64,
}

impl BenchOptions {
    /// 001's shape at a scale this machine can afford in a few minutes.
    pub fn standard(path: PathBuf) -> BenchOptions {
        BenchOptions {
            path,
            file_bytes: 1 << 30,
            ks: vec![1, 2, 4, 8, 16],
            rs: vec![0.001, 0.01, 0.1, 0.5, 1.0],
            seconds_per_point: 1.0,
            page_bytes: 4096,
            direct: true,
            force: false,
            seed: 1,
        }
    }

    /// Within a minute: a small file, three k, three r, short points.
    pub fn quick(path: PathBuf) -> BenchOptions {
        BenchOptions {
            file_bytes: 256 << 20,
            ks: vec![1, 2, 4],
            rs: vec![0.01, 0.1, 1.0],
            seconds_per_point: 0.4,
            ..BenchOptions::standard(path)
        }
    }

    pub fn validate(&self) -> Result<(), MqssdError> {
        let bad = |why: String| Err(MqssdError::Options(why));
        if self.page_bytes == 0 || !self.page_bytes.is_multiple_of(4096) {
            return bad(format!("page size {} is not a multiple of 4096", self.page_bytes));
        }
        if self.ks.is_empty() || self.ks.iter().any(|&k| k == 0 || k > THREADS_MAX) {
            return bad(format!("thread counts must be in 1..={THREADS_MAX}"));
        }
        let k_max = u64::from(self.ks.iter().copied().max().unwrap_or(1));
        if self.file_bytes / k_max < self.page_bytes * 2 {
            return bad(format!("{} bytes leave less than two pages per thread", self.file_bytes));
        }
        if self.rs.len() < 2 || self.rs.iter().any(|&r| !(r > 0.0 && r <= 1.0)) {
            return bad("need at least two r values, each in (0, 1]".into());
        }
        if !(self.seconds_per_point > 0.0 && self.seconds_per_point <= 3600.0) {
            return bad("seconds per point must be in (0, 3600]".into());
        }
        Ok(())
    }

    pub fn info(&self) -> DeviceInfo {
        DeviceInfo {
            device: self.path.display().to_string(),
            page_bytes: self.page_bytes,
            file_bytes: self.file_bytes,
            direct: self.direct,
            seconds_per_point: self.seconds_per_point,
        }
    }

    /// Points the run measures: (op, k, r) in order.
    pub fn plan(&self) -> Vec<(Op, u32, f64)> {
        let mut plan = Vec::new();
        for &k in &self.ks {
            for op in [Op::Write, Op::Read] {
                plan.extend(self.rs.iter().map(|&r| (op, k, r)));
            }
        }
        plan
    }
}

/// Refuses to destroy data: an existing non-empty file or any block device needs `force`.
pub fn check_target(path: &Path, force: bool) -> Result<(), MqssdError> {
    use std::os::unix::fs::FileTypeExt;
    let refused = |reason: &str| MqssdError::Refused {
        path: path.display().to_string(),
        reason: reason.to_string(),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_block_device() && !force => {
            Err(refused("is a block device; the benchmark overwrites it"))
        }
        Ok(meta) if meta.is_dir() => {
            Err(MqssdError::Options(format!("{} is a directory", path.display())))
        }
        Ok(meta) if meta.len() > 0 && !force => Err(refused("exists and is not empty")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            match parent {
                Some(dir) if !dir.is_dir() => {
                    Err(MqssdError::Options(format!("{}: directory does not exist", dir.display())))
                }
                _ => Ok(()),
            }
        }
        Err(source) => Err(MqssdError::Io { path: path.display().to_string(), source }),
    }
}

/// What a run measured: the (op, k, r) points and the timed syncs.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub points: Vec<Point>,
    pub syncs: Vec<SyncPoint>,
}

/// Opens and fills the file (reads of a hole measure nothing, and a write into one changes
/// the file's metadata, which a sync would then also pay for).
fn open_filled(
    options: &BenchOptions,
    progress: &mut dyn Progress,
) -> Result<Arc<FileDevice>, MqssdError> {
    options.validate()?;
    check_target(&options.path, options.force)?;
    let file_options = if options.direct { FileOptions::DIRECT } else { FileOptions::BUFFERED };
    let device = Arc::new(FileDevice::open(&options.path, options.file_bytes, file_options)?);
    progress.start("fill", options.file_bytes);
    fill(device.as_ref(), options.file_bytes, progress)?;
    progress.finish();
    Ok(device)
}

/// Runs the whole benchmark: fills the file, then every point of the plan, then the syncs.
/// Progress counts points.
pub fn run(options: &BenchOptions, progress: &mut dyn Progress) -> Result<Measured, MqssdError> {
    let device = open_filled(options, progress)?;
    let points = measure_points(&device, options, progress)?;
    let syncs = measure_syncs(device.as_ref(), options)?;
    Ok(Measured { points, syncs })
}

/// Only the syncs (to add the sync term to a profile measured without it).
pub fn run_syncs(
    options: &BenchOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<SyncPoint>, MqssdError> {
    let device = open_filled(options, progress)?;
    measure_syncs(device.as_ref(), options)
}

/// The mean fdatasync latency after one sequential run of each of [`SYNC_PAGES`] pages at a
/// random place (runs longer than the file are cut to it).
fn measure_syncs(
    device: &FileDevice,
    options: &BenchOptions,
) -> Result<Vec<SyncPoint>, MqssdError> {
    let file_pages = options.file_bytes / options.page_bytes;
    let mut rng = Rng::new(options.seed ^ 0x5_c0de);
    let mut syncs = Vec::with_capacity(SYNC_PAGES.len());
    for &wanted in &SYNC_PAGES {
        let pages = wanted.min(file_pages).min(IO_BYTES_MAX / options.page_bytes);
        let mut buf = AlignedBuf::zeroed((pages * options.page_bytes) as usize);
        rng.fill_bytes(&mut buf);
        let mut us = Vec::with_capacity(SYNC_REPEATS);
        for _ in 0..SYNC_REPEATS {
            let offset = rng.below(file_pages - pages + 1) * options.page_bytes;
            device.write_at(offset, &buf, WritePurpose::UserEviction)?;
            let started = Instant::now();
            device.sync()?;
            us.push(started.elapsed().as_secs_f64() * 1e6);
        }
        syncs.push(SyncPoint { pages, us: us.iter().sum::<f64>() / us.len() as f64 });
    }
    Ok(syncs)
}

/// Every point of the plan.
fn measure_points(
    device: &Arc<FileDevice>,
    options: &BenchOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<Point>, MqssdError> {
    let plan = options.plan();
    progress.start("profile", plan.len() as u64);
    let mut points = Vec::with_capacity(plan.len());
    for (index, &(op, k, r)) in plan.iter().enumerate() {
        let bytes_per_s = measure(device, options, op, k, r)?;
        points.push(Point { op, k, r, bytes_per_s });
        let note = || format!("{op:?} k={k} r={r}: {:.1} MB/s", bytes_per_s / 1e6);
        progress.update(index as u64 + 1, &note);
    }
    progress.finish();
    Ok(points)
}

fn fill(
    device: &FileDevice,
    file_bytes: u64,
    progress: &mut dyn Progress,
) -> Result<(), MqssdError> {
    let mut buf = AlignedBuf::zeroed(IO_BYTES_MAX as usize);
    Rng::new(0x5eed).fill_bytes(&mut buf);
    let mut offset = 0;
    // Bounded: each round writes at least one page.
    while offset < file_bytes {
        let len = (file_bytes - offset).min(IO_BYTES_MAX);
        device.write_at(offset, &buf[..len as usize], WritePurpose::UserEviction)?;
        offset += len;
        progress.update(offset, &String::new);
    }
    device.sync()?;
    Ok(())
}

/// One point: k threads for the point's time; aggregate bytes per second.
fn measure(
    device: &Arc<FileDevice>,
    options: &BenchOptions,
    op: Op,
    k: u32,
    r: f64,
) -> Result<f64, MqssdError> {
    let share_pages = options.file_bytes / u64::from(k) / options.page_bytes;
    let run_pages = ((1.0 / r).round() as u64).clamp(1, share_pages);
    let deadline = Duration::from_secs_f64(options.seconds_per_point);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let results: Vec<Result<u64, MqssdError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..k)
            .map(|thread| {
                let job = Job {
                    device: device.as_ref(),
                    page_bytes: options.page_bytes,
                    first_page: u64::from(thread) * share_pages,
                    share_pages,
                    run_pages,
                    op,
                    seed: options.seed ^ (u64::from(k) << 32) ^ u64::from(thread),
                };
                let stop = &stop;
                scope.spawn(move || job.run(started, deadline, stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(MqssdError::Options("a benchmark thread panicked".into()))
                })
            })
            .collect()
    });
    let elapsed_s = started.elapsed().as_secs_f64();
    if op == Op::Write {
        device.sync()?;
    }
    let mut bytes = 0u64;
    for result in results {
        bytes += result?;
    }
    Ok(bytes as f64 / elapsed_s.max(1e-9))
}

/// One thread's loop of one point.
struct Job<'a> {
    device: &'a FileDevice,
    page_bytes: u64,
    first_page: u64,
    share_pages: u64,
    run_pages: u64,
    op: Op,
    seed: u64,
}

impl Job<'_> {
    fn run(
        &self,
        started: Instant,
        deadline: Duration,
        stop: &AtomicBool,
    ) -> Result<u64, MqssdError> {
        let io_bytes = (self.run_pages * self.page_bytes).min(IO_BYTES_MAX);
        let mut buf = AlignedBuf::zeroed(io_bytes as usize);
        let mut rng = Rng::new(self.seed);
        rng.fill_bytes(&mut buf);
        let mut done_bytes = 0u64;
        for _ in 0..ACCESSES_MAX {
            // At least one access each: a thread that started after the deadline (a loaded
            // machine) still measures, and the elapsed time at the join covers it.
            let over = stop.load(Ordering::Relaxed) || started.elapsed() >= deadline;
            if over && done_bytes > 0 {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            // A random start so the run fits the share: the random access of 001.
            let start = self.first_page + rng.below(self.share_pages - self.run_pages + 1);
            let mut page = start;
            let end = start + self.run_pages;
            while page < end {
                let len = ((end - page) * self.page_bytes).min(io_bytes);
                let offset = page * self.page_bytes;
                match self.op {
                    Op::Write => self.device.write_at(
                        offset,
                        &buf[..len as usize],
                        WritePurpose::UserEviction,
                    )?,
                    Op::Read => self.device.read_at(offset, &mut buf[..len as usize])?,
                }
                page += len / self.page_bytes;
                done_bytes += len;
            }
        }
        Ok(done_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    #[test]
    fn a_tiny_buffered_run_measures_every_point() {
        let dir = std::env::temp_dir().join(format!("wafer-mqssd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("profile.bin");
        let _ = std::fs::remove_file(&path);
        let options = BenchOptions {
            file_bytes: 1 << 20,
            ks: vec![1, 2],
            rs: vec![0.1, 1.0],
            seconds_per_point: 0.02,
            direct: false,
            ..BenchOptions::standard(path.clone())
        };
        let measured = run(&options, &mut Silent).expect("run");
        assert_eq!(measured.points.len(), 8);
        assert!(measured.points.iter().all(|p| p.bytes_per_s > 0.0));
        // 1 MiB holds 256 pages: the longer runs are cut to the file.
        let pages: Vec<u64> = measured.syncs.iter().map(|s| s.pages).collect();
        assert_eq!(pages, [1, 16, 64, 256, 256]);
        assert!(measured.syncs.iter().all(|s| s.us.is_finite() && s.us >= 0.0));
        // Now the file exists and holds data: a second run must be refused without force.
        assert!(matches!(run(&options, &mut Silent), Err(MqssdError::Refused { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn options_are_checked() {
        let mut options = BenchOptions::quick(PathBuf::from("x"));
        assert!(options.validate().is_ok());
        options.rs = vec![0.5];
        assert!(options.validate().is_err());
        options.rs = vec![0.0, 1.0];
        assert!(options.validate().is_err());
    }
}
