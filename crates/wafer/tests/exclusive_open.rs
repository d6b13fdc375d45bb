#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! One writer per database, across processes: the test binary re-executes itself as the child
//! (env `WAFER_LOCK_CHILD`), which either tries an open and prints what it got, or opens,
//! writes, prints `holding` and waits to be killed.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use wafer::{Db, DbOpenError, Durability, OpenError, Options};

fn options(out_of_place: bool) -> Options {
    let o = Options::test_min().with_durability(Durability::Sync).with_blobs(100);
    if out_of_place {
        o.out_of_place()
    } else {
        o
    }
}

fn temp_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("wafer-lock-{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(wafer::db::wal_path(&path));
    path
}

/// The child's side: `try` prints the open's outcome; `hold` opens, writes and waits.
fn child(path: &str, action: &str, out_of_place: bool) {
    match (action, Db::open(path, options(out_of_place))) {
        ("try", Ok(_)) => println!("child: opened"),
        ("try", Err(DbOpenError::Refused(OpenError::Locked { path }))) => {
            println!("child: locked {}", path.display())
        }
        ("try", Err(e)) => println!("child: other error {e}"),
        (_, Ok(db)) => {
            db.tree("held").unwrap().put(b"child", &[7u8; 300]).unwrap();
            println!("child: holding");
            // Bounded: the parent kills us within seconds.
            std::thread::sleep(std::time::Duration::from_secs(120));
        }
        (_, Err(e)) => println!("child: could not hold: {e}"),
    }
}

/// Runs test `name` as a child with `action`, returning its first line that starts "child:"
/// and the running process (for `hold`, still alive).
fn spawn(name: &str, path: &Path, action: &str) -> (String, std::process::Child) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("WAFER_LOCK_CHILD", path)
        .env("WAFER_LOCK_ACTION", action)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.find("child:").map(|at| l[at..].to_string()))
        .unwrap_or_default();
    // The rest is read until the child exits: its test harness still reports on stdout, and a
    // closed pipe made it print a broken-pipe error into this test's output.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (line, child)
}

/// True (after running the child's part) when this process is the child.
fn is_child(out_of_place: bool) -> bool {
    let Ok(path) = std::env::var("WAFER_LOCK_CHILD") else { return false };
    child(&path, &std::env::var("WAFER_LOCK_ACTION").unwrap(), out_of_place);
    true
}

fn held_database_is_refused_to_another_process(name: &str, out_of_place: bool) {
    if is_child(out_of_place) {
        return;
    }
    let path = temp_path(name);
    let db = Db::open(&path, options(out_of_place)).unwrap();
    db.tree("t").unwrap().put(b"parent", b"value").unwrap();
    let wal_before = std::fs::read(wafer::db::wal_path(&path)).unwrap();
    let (line, mut child) = spawn(name, &path, "try");
    child.wait().unwrap();
    assert_eq!(line, format!("child: locked {}", path.display()));
    assert_eq!(std::fs::read(wafer::db::wal_path(&path)).unwrap(), wal_before, "child wrote");
    // In this process too: a second Db on the same files is another writer.
    let err = Db::open(&path, options(out_of_place)).unwrap_err();
    assert!(matches!(err, DbOpenError::Refused(OpenError::Locked { .. })), "{err}");
    assert_eq!(db.tree("t").unwrap().get(b"parent").unwrap().as_deref(), Some(&b"value"[..]));
    db.close().unwrap();
    // Closed and dropped: the lock went with it.
    let (line, mut child) = spawn(name, &path, "try");
    child.wait().unwrap();
    assert_eq!(line, "child: opened");
    let _ = std::fs::remove_file(wafer::db::wal_path(&path));
    let _ = std::fs::remove_file(&path);
}

fn killed_holder_leaves_no_lock(name: &str, out_of_place: bool) {
    if is_child(out_of_place) {
        return;
    }
    let path = temp_path(name);
    let (line, mut child) = spawn(name, &path, "hold");
    assert_eq!(line, "child: holding");
    let err = Db::open(&path, options(out_of_place)).unwrap_err();
    assert!(matches!(err, DbOpenError::Refused(OpenError::Locked { .. })), "{err}");
    child.kill().unwrap();
    child.wait().unwrap();
    let db = Db::open(&path, options(out_of_place)).unwrap();
    let got = db.tree("held").unwrap().get(b"child").unwrap();
    assert_eq!(got.as_deref(), Some(&[7u8; 300][..]), "the killed holder's Sync write");
    assert!(db.check().unwrap().is_clean());
    drop(db);
    let _ = std::fs::remove_file(wafer::db::wal_path(&path));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn in_place_held_database_is_refused_to_another_process() {
    held_database_is_refused_to_another_process(
        "in_place_held_database_is_refused_to_another_process",
        false,
    );
}

#[test]
fn out_of_place_held_database_is_refused_to_another_process() {
    held_database_is_refused_to_another_process(
        "out_of_place_held_database_is_refused_to_another_process",
        true,
    );
}

#[test]
fn in_place_killed_holder_leaves_no_lock() {
    killed_holder_leaves_no_lock("in_place_killed_holder_leaves_no_lock", false);
}

#[test]
fn out_of_place_killed_holder_leaves_no_lock() {
    killed_holder_leaves_no_lock("out_of_place_killed_holder_leaves_no_lock", true);
}

/// Two opens racing to create one database: exactly one creates it, the other is refused
/// (or, if it came after the first closed, opens it); never two writers, never debris.
#[test]
fn racing_creations_make_one_database() {
    if std::env::var("WAFER_LOCK_CHILD").is_ok() {
        return;
    }
    for round in 0..20 {
        let path = temp_path(&format!("race{round}"));
        let outcomes: Vec<Result<Db, DbOpenError>> = std::thread::scope(|s| {
            let a = s.spawn(|| Db::open(&path, options(round % 2 == 1)));
            let b = s.spawn(|| Db::open(&path, options(round % 2 == 1)));
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        let opened = outcomes.iter().filter(|o| o.is_ok()).count();
        assert!(opened == 1, "round {round}: {opened} opens held the database at once");
        for o in &outcomes {
            if let Err(e) = o {
                assert!(
                    matches!(e, DbOpenError::Refused(OpenError::Locked { .. })),
                    "round {round}: {e}"
                );
            }
        }
        drop(outcomes);
        let db = Db::open(&path, options(round % 2 == 1)).unwrap();
        assert!(db.check().unwrap().is_clean());
        drop(db);
        let _ = std::fs::remove_file(wafer::db::wal_path(&path));
        let _ = std::fs::remove_file(&path);
    }
}
