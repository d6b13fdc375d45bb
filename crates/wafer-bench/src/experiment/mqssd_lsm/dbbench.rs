//! Running Debian's `db_bench` (rocksdb-tools) for one sweep cell and reading what it printed.
//!
//! Times come from db_bench's own per-benchmark line (`... 2.593 seconds 10000 operations`),
//! except the insert time: `waitforcompaction` first sleeps a fixed 5 s and then polls, so the
//! process's wall time says little about when compaction ended. The insert time is instead the
//! last flush or compaction event in the database's LOG (RocksDB stamps each with wall-clock
//! microseconds) minus the moment the process was started.
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::LsmError;
use super::sweep::{FillRun, Layout, ReadBench, ReadRun, Sweep};

const GIB: f64 = (1u64 << 30) as f64;
/// L1's size limit in the single-level layout: larger than any database here, so L1 never
/// overflows into a level 2.
const UNBOUNDED_LEVEL_BYTES: u64 = 1 << 50;
/// The LOG events that end a piece of background work.
const END_EVENTS: [&str; 3] = ["flush_finished", "compaction_finished", "trivial_move"];

/// The version line db_bench prints (`db_bench version 7.8.3`); `Missing` when it is absent.
pub fn version(program: &Path) -> Result<String, LsmError> {
    let out =
        Command::new(program).arg("--version").output().map_err(|e| spawn_error(program, e))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn spawn_error(program: &Path, source: std::io::Error) -> LsmError {
    if source.kind() == std::io::ErrorKind::NotFound {
        LsmError::Missing { program: program.display().to_string() }
    } else {
        LsmError::Io { what: program.display().to_string(), source }
    }
}

/// The options every run of a layout shares: 001 sec. 5.3.1's settings (no compression, direct
/// I/O, L1 = C files of T bytes, write buffer = T) at the sweep's sizes.
fn layout_args(sweep: &Sweep, layout: Layout, db: &Path) -> Vec<String> {
    let mut args = vec![
        format!("--db={}", db.display()),
        format!("--num={}", sweep.keys),
        format!("--key_size={}", sweep.key_bytes),
        format!("--value_size={}", sweep.value_bytes),
        "--compression_type=none".into(),
        "--use_direct_reads=1".into(),
        "--use_direct_io_for_flush_and_compaction=1".into(),
        format!("--write_buffer_size={}", sweep.file_bytes),
        format!("--target_file_size_base={}", sweep.file_bytes),
        format!("--block_size={}", sweep.block_bytes),
        "--histogram=0".into(),
    ];
    match layout {
        Layout::Leveled { fanout } => {
            args.push(format!("--level0_file_num_compaction_trigger={}", sweep.l0_files));
            args.push(format!("--max_bytes_for_level_base={}", sweep.l0_files_bytes()));
            args.push(format!("--max_bytes_for_level_multiplier={fanout}"));
        }
        Layout::SingleLevel => {
            // Every file flushed to L0 is merged into L1 at once, and L1 is the last level.
            args.push("--level0_file_num_compaction_trigger=1".into());
            args.push("--num_levels=2".into());
            args.push(format!("--max_bytes_for_level_base={UNBOUNDED_LEVEL_BYTES}"));
        }
    }
    args
}

fn run(program: &Path, args: &[String]) -> Result<String, LsmError> {
    let out = Command::new(program).args(args).output().map_err(|e| spawn_error(program, e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
        return Err(LsmError::Failed {
            args: args.join(" "),
            status: out.status.to_string(),
            tail,
        });
    }
    Ok(stdout)
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Loads the sweep's keys in random order into a fresh database with one user thread and k
/// compaction threads (and at most k subcompactions), waits for compaction to finish, and
/// reads the LOG for when it did.
pub fn fill(
    program: &Path,
    db: &Path,
    sweep: &Sweep,
    layout: Layout,
    k: u32,
) -> Result<FillRun, LsmError> {
    if db.exists() {
        std::fs::remove_dir_all(db)
            .map_err(|source| LsmError::Io { what: db.display().to_string(), source })?;
    }
    let mut args = layout_args(sweep, layout, db);
    args.extend([
        "--benchmarks=filluniquerandom,waitforcompaction,stats".to_string(),
        "--threads=1".into(),
        "--max_background_flushes=1".into(),
        format!("--max_background_compactions={k}"),
        format!("--subcompactions={k}"),
    ]);
    let start_us = now_us();
    let out = run(program, &args)?;
    let (load_s, _) = parse_benchmark(&out, "filluniquerandom")
        .ok_or_else(|| LsmError::Parse("no filluniquerandom line".into()))?;
    let log_path = db.join("LOG");
    let log = std::fs::read_to_string(&log_path)
        .map_err(|source| LsmError::Io { what: log_path.display().to_string(), source })?;
    let last_us = last_event_us(&log).unwrap_or(start_us);
    let insert_s = (last_us.saturating_sub(start_us) as f64 / 1e6).max(load_s);
    Ok(FillRun {
        layout,
        k,
        load_s,
        insert_s,
        flush_bytes: gib_after(&out, "Flush(GB): cumulative").map_or(0, to_bytes),
        compaction_write_bytes: gib_after(&out, "Cumulative compaction:").map_or(0, to_bytes),
        sorted_runs: sorted_runs(&out)
            .ok_or_else(|| LsmError::Parse("no compaction stats table".into()))?,
    })
}

fn to_bytes(gib: f64) -> u64 {
    (gib * GIB) as u64
}

/// Point queries or scans with k user threads on the database `fill` left, after reading it
/// once in order (001 used `readtocache` so that the index blocks are in memory). db_bench
/// counts reads per thread, so each of the k threads does 1/k of the sweep's total.
pub fn read(
    program: &Path,
    db: &Path,
    sweep: &Sweep,
    layout: Layout,
    k: u32,
    bench: ReadBench,
) -> Result<ReadRun, LsmError> {
    let (name, total) = match bench {
        ReadBench::Query => ("readrandom", sweep.queries),
        ReadBench::Scan => ("seekrandom", sweep.scans),
    };
    let mut args = layout_args(sweep, layout, db);
    args.extend([
        "--use_existing_db=1".to_string(),
        format!("--benchmarks=readtocache,{name}"),
        format!("--threads={k}"),
        format!("--reads={}", total.div_ceil(u64::from(k.max(1)))),
        format!("--seek_nexts={}", sweep.scan_keys),
    ]);
    let out = run(program, &args)?;
    let (elapsed_s, ops) =
        parse_benchmark(&out, name).ok_or_else(|| LsmError::Parse(format!("no {name} line")))?;
    Ok(ReadRun { layout, k, bench, elapsed_s, ops })
}

/// (seconds, operations) from a benchmark's result line:
/// `readrandom   :     258.014 micros/op 3857 ops/sec 2.593 seconds 10000 operations; ...`.
pub fn parse_benchmark(out: &str, name: &str) -> Option<(f64, u64)> {
    // Progress lines end in '\r' without a newline, so a result can follow them on one line.
    let line = out.lines().flat_map(|l| l.split('\r')).find(|l| {
        let l = l.trim_start();
        l.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with(':'))
    })?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |unit: &str| {
        let at = words.iter().position(|w| w.trim_end_matches(';') == unit)?;
        words.get(at.checked_sub(1)?)
    };
    let seconds = before("seconds")?.parse().ok()?;
    let ops = before("operations")?.parse().ok()?;
    Some((seconds, ops))
}

/// The number after `prefix` on the first line that starts with it, in GiB
/// (`Cumulative compaction: 1.06 GB write, ...`, `Flush(GB): cumulative 0.254, ...`).
pub fn gib_after(out: &str, prefix: &str) -> Option<f64> {
    let line = out.lines().find_map(|l| l.trim_start().strip_prefix(prefix))?;
    line.split(|c: char| c.is_whitespace() || c == ',').find(|w| !w.is_empty())?.parse().ok()
}

/// Sorted runs in the first compaction-stats table: each L0 file is a run of its own, and each
/// deeper level that holds files is one.
pub fn sorted_runs(out: &str) -> Option<u32> {
    let table = out.split("** Compaction Stats").nth(1)?;
    let mut runs = 0;
    let mut seen = false;
    for line in table.lines() {
        let mut words = line.split_whitespace();
        let (Some(level), Some(files)) = (words.next(), words.next()) else { continue };
        let Some(depth) = level.strip_prefix('L').and_then(|d| d.parse::<u32>().ok()) else {
            continue;
        };
        let count: u32 = files.split('/').next()?.parse().ok()?;
        seen = true;
        runs += if depth == 0 { count } else { u32::from(count > 0) };
    }
    seen.then_some(runs)
}

/// The latest wall-clock time (microseconds since the epoch) of a flush or compaction ending in
/// a RocksDB LOG: lines such as `EVENT_LOG_v1 {"time_micros": 1795820734756303, "job": 184,
/// "event": "trivial_move", ...}`.
pub fn last_event_us(log: &str) -> Option<u64> {
    log.lines()
        .filter(|l| END_EVENTS.iter().any(|e| l.contains(&format!("\"event\": \"{e}\""))))
        .filter_map(|l| {
            let rest = l.split("\"time_micros\": ").nth(1)?;
            rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "\
... finished 3500 ops\r... finished 4000 ops\rfilluniquerandom :     109.783 micros/op 9093 ops/sec 0.440 seconds 4000 operations;   17.9 MB/s
waitforcompaction(/work/x): started

** Compaction Stats [default] **
Level    Files   Size     Score Read(GB)  Rn(GB)
------------------------------------------------
  L0      2/0    0.00 KB   0.0      0.0     0.0
  L1      3/0    3.05 MB   0.8      0.1     0.0
  L2      0/0   12.55 MB   0.8      0.0     0.0
  L3     24/0   23.71 MB   0.4      0.0     0.0
 Sum     29/0   39.31 MB   0.0      0.1     0.1

** Compaction Stats [default] **
Priority    Files   Size     Score Read(GB)  Rn(GB)
 Low      0/0    0.00 KB   0.0      0.1     0.1
Flush(GB): cumulative 0.254, interval 0.139
Cumulative compaction: 1.06 GB write, 75.60 MB/s write, 0.81 GB read, 57.52 MB/s read, 12.4 seconds
readrandom   :     258.014 micros/op 3857 ops/sec 2.593 seconds 10000 operations;    7.6 MB/s (10000 of 10000 found)
";

    #[test]
    fn result_lines_give_seconds_and_operations() {
        assert_eq!(parse_benchmark(OUT, "filluniquerandom"), Some((0.440, 4000)));
        assert_eq!(parse_benchmark(OUT, "readrandom"), Some((2.593, 10000)));
        assert_eq!(parse_benchmark(OUT, "seekrandom"), None);
    }

    #[test]
    fn stats_give_bytes_and_sorted_runs() {
        assert_eq!(gib_after(OUT, "Flush(GB): cumulative"), Some(0.254));
        assert_eq!(gib_after(OUT, "Cumulative compaction:"), Some(1.06));
        // Two L0 files, L1 and L3: the empty L2 is no run.
        assert_eq!(sorted_runs(OUT), Some(4));
        assert_eq!(sorted_runs("no table"), None);
    }

    #[test]
    fn the_last_background_event_is_found() {
        let log = "\
2026/11/27 x EVENT_LOG_v1 {\"time_micros\": 100, \"job\": 2, \"event\": \"flush_started\"}
2026/11/27 x EVENT_LOG_v1 {\"time_micros\": 250, \"job\": 2, \"event\": \"flush_finished\"}
2026/11/27 x EVENT_LOG_v1 {\"time_micros\": 900, \"job\": 3, \"event\": \"compaction_started\"}
2026/11/27 x EVENT_LOG_v1 {\"time_micros\": 700, \"job\": 4, \"event\": \"trivial_move\"}
";
        assert_eq!(last_event_us(log), Some(700));
        assert_eq!(last_event_us(""), None);
    }

    #[test]
    fn layouts_set_fanout_or_one_merged_level() {
        let sweep = Sweep::tiny();
        let db = Path::new("/tmp/db");
        let leveled = layout_args(&sweep, Layout::Leveled { fanout: 8 }, db);
        assert!(leveled.contains(&"--max_bytes_for_level_multiplier=8".to_string()));
        let single = layout_args(&sweep, Layout::SingleLevel, db);
        assert!(single.contains(&"--num_levels=2".to_string()));
        assert!(single.contains(&"--level0_file_num_compaction_trigger=1".to_string()));
    }
}
