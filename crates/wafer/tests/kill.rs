#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! A real process killed with SIGKILL mid-workload, many times: the test binary re-executes
//! itself as the child (env `WAFER_KILL_CHILD`), which writes with `Sync` durability and prints
//! `ack <round> <i>` after each acknowledged write; the parent kills it at a random moment,
//! reopens the database (recovery) and checks every acknowledged key and value of every round.
//! Values of 100 bytes and more are stored out of line (blobs), and the data file starts at
//! 512 KiB and grows. `WAFER_KILL_ROUNDS=N` for more rounds (default 12).
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use wafer::{Db, Durability, Options, WriteBatch};

fn options(out_of_place: bool) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096);
    o.durability = Durability::Sync;
    // The production write path: batches through io_uring (merged runs; pwritev where the
    // kernel refuses io_uring) and append splits, which the ascending keys below take.
    o.file = wafer::device::FileOptions::URING;
    o.append_split = true;
    o.background_write_back = true;
    o.background_checkpoint = true;
    // Values of 100 bytes and more out of line: blobs staged for the log's write, written,
    // freed and reused while the child is killed.
    o.blob_threshold_bytes = Some(100);
    // A file created small that grows while the child is killed (out of place: zones added).
    o.file_capacity_bytes = 512 << 10;
    o.max_file_bytes = Some(64 << 20);
    if out_of_place {
        o = o.out_of_place();
    }
    o
}

fn key(round: u64, i: u64) -> Vec<u8> {
    format!("r{round:03}-{i:06}").into_bytes()
}

fn value(round: u64, i: u64) -> Vec<u8> {
    let unit = format!("v{round}.{i};");
    unit.repeat(1 + (i as usize * 7) % 40).into_bytes()
}

/// The child: writes until killed. Every 5th write is a two-key batch (both keys acked).
fn child(path: &str, round: u64, out_of_place: bool) {
    let db = Db::open(path, options(out_of_place)).unwrap();
    let t = db.tree("kill").unwrap();
    let mut i = 0u64;
    // Bounded; the parent kills us long before.
    while i < 1_000_000 {
        if i % 5 == 4 {
            let mut b = WriteBatch::new();
            b.put("kill", &key(round, i), &value(round, i));
            b.put("kill", &key(round, i + 1), &value(round, i + 1));
            db.write(&b).unwrap();
            println!("ack {round} {i}");
            println!("ack {round} {}", i + 1);
            i += 2;
        } else {
            t.put(&key(round, i), &value(round, i)).unwrap();
            println!("ack {round} {i}");
            i += 1;
        }
        if i.is_multiple_of(10) {
            scratch_cut(&db, i);
        }
        if i % 50 == 1 {
            backup(&db, path);
        }
    }
}

/// `<path>.bk`: where the child backs the database up, now and then.
fn backup_path(path: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{path}.bk"))
}

/// Replaces the last backup with a new one, while the kill may land anywhere in it.
fn backup(db: &Db, path: &str) {
    let target = backup_path(path);
    // The data file first: a WAL alone is no database, a data file alone would be a broken one.
    let _ = std::fs::remove_file(&target);
    let _ = std::fs::remove_file(wafer::db::wal_path(&target));
    db.backup_to(&target).unwrap();
}

/// After a kill: a backup at the target is whole (it opens and checks clean, every value one
/// the child wrote); then it and the temporary files of one cut short go.
fn check_backup(path: &std::path::Path, out_of_place: bool, round: u64) -> bool {
    let target = backup_path(&path.display().to_string());
    let found = target.exists();
    if found {
        let copy = Db::open(&target, options(out_of_place).with_create(wafer::CreateMode::Never))
            .unwrap_or_else(|e| panic!("round {round}: the backup does not open: {e}"));
        for kv in copy.tree("kill").unwrap().iter() {
            let (k, v) = kv.unwrap();
            let k = String::from_utf8(k).unwrap();
            let (r, i) = k[1..].split_once('-').unwrap();
            assert_eq!(v, value(r.parse().unwrap(), i.parse().unwrap()), "round {round}: {k}");
        }
        let report = copy.check().unwrap();
        assert!(report.is_clean(), "round {round}: backup: {report}");
    }
    let _ = std::fs::remove_file(&target);
    let _ = std::fs::remove_file(wafer::db::wal_path(&target));
    let dir = path.parent().unwrap();
    let stem = target.file_name().unwrap().to_string_lossy().into_owned();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&format!("{stem}.backup-")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    found
}

/// Keys a scratch batch puts; the parent finds none of them or all.
const SCRATCH_KEYS: u64 = 40;

/// Fills the `scratch` tree with one batch, then removes it all again: by a range delete, a
/// clear or a drop of the tree. A kill lands in the cut's batch or in the batches that free
/// what it detached.
fn scratch_cut(db: &Db, i: u64) {
    let mut b = WriteBatch::new();
    for j in 0..SCRATCH_KEYS {
        b.put("scratch", format!("s{j:04}").as_bytes(), &value(0, i + j));
    }
    db.write(&b).unwrap();
    match (i / 10) % 3 {
        0 => db.tree("scratch").unwrap().delete_range(b"s".as_slice()..b"t".as_slice()).unwrap(),
        1 => db.tree("scratch").unwrap().clear().unwrap(),
        _ => assert!(db.drop_tree("scratch").unwrap()),
    }
}

/// An ack line. Found anywhere in the line: with one test thread (RUST_TEST_THREADS=1) the
/// harness prints `test NAME ... ` without a newline before the child's first ack.
fn is_ack(line: &str) -> bool {
    line.contains("ack ")
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn sigkill_loses_no_acknowledged_write() {
    sigkill_rounds("sigkill_loses_no_acknowledged_write", false);
}

#[test]
fn sigkill_out_of_place_loses_no_acknowledged_write() {
    sigkill_rounds("sigkill_out_of_place_loses_no_acknowledged_write", true);
}

/// Runs the parent side for test `name` (the child re-runs the same test), in either mode.
fn sigkill_rounds(name: &str, out_of_place: bool) {
    if let Ok(path) = std::env::var("WAFER_KILL_CHILD") {
        let round = std::env::var("WAFER_KILL_ROUND").unwrap().parse().unwrap();
        child(&path, round, out_of_place);
        return;
    }
    let rounds: u64 =
        std::env::var("WAFER_KILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    let path = std::env::temp_dir().join(format!("wafer-{name}-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ std::process::id() as u64);
    let mut acked: Vec<u64> = Vec::new(); // Per round: acknowledged writes 0..n.
    let mut backups = 0u64;
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args(["--exact", name, "--nocapture"])
            .env("WAFER_KILL_CHILD", &path)
            .env("WAFER_KILL_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let kill_after = 1 + rng.below(150);
        let mut lines = BufReader::new(stdout).lines();
        let mut n = 0u64;
        // Read acks until the kill point, kill, then drain what the child printed before dying.
        for line in lines.by_ref() {
            let line = line.unwrap();
            if is_ack(&line) {
                n += 1;
                if n >= kill_after {
                    break;
                }
            }
        }
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        assert_eq!(r, 0, "kill failed");
        for line in lines {
            let Ok(line) = line else { break };
            if is_ack(&line) {
                n += 1;
            }
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "round {round}: the child must die by the signal");
        acked.push(n);
        // Acks are printed in write order (0, 1, 2, ...), so n acks cover writes 0..n.
        let db = Db::open(&path, options(out_of_place)).unwrap();
        let t = db.tree("kill").unwrap();
        for (r, &count) in acked.iter().enumerate() {
            for i in 0..count {
                let got = t.get(&key(r as u64, i)).unwrap();
                assert_eq!(
                    got.as_deref(),
                    Some(&value(r as u64, i)[..]),
                    "round {r} write {i} (of {count} acknowledged) after kill round {round}"
                );
            }
        }
        backups += u64::from(check_backup(&path, out_of_place, round));
        let scratch = db.tree("scratch").unwrap().iter().count() as u64;
        assert!(scratch == 0 || scratch == SCRATCH_KEYS, "round {round}: {scratch} scratch keys");
        let report = db.check().unwrap();
        assert!(report.is_clean(), "after kill round {round}: {report}");
        drop(db); // A crash too: the next round recovers from this one's log.
    }
    let file_bytes = std::fs::metadata(&path).unwrap().len();
    eprintln!(
        "{rounds} kills, {backups} backups found whole, file {file_bytes} bytes, acknowledged \
         writes per round: {acked:?}"
    );
    // Blob values take a page each: a few hundred writes outgrow the 512 KiB the file began at.
    if acked.iter().sum::<u64>() >= 400 {
        assert!(file_bytes > 512 << 10, "the file grew while killed: {file_bytes} bytes");
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
}
