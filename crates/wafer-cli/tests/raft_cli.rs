#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! `wafer raft cluster` and `wafer raft bench` end to end: the cluster serves writes and
//! reads and stops on SIGINT; the bench prints a row of nonzero figures.
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use wafer_raft::client::Client;

fn wafer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wafer"))
}

/// The `http://HOST:PORT` addresses of the nodes `wafer raft cluster` prints.
fn addresses(lines: &[String]) -> Vec<String> {
    let addr = |l: &String| l.split("http://").nth(1)?.split([',', ' ']).next().map(str::to_owned);
    lines.iter().filter(|l| l.starts_with("node ")).filter_map(addr).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_serves_and_stops_on_sigint() {
    let dir = std::env::temp_dir().join(format!("wafer-raft-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = wafer()
        .args(["raft", "cluster", "--nodes", "3", "--election-timeout-ms", "600", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Everything up to the last line it prints before waiting for Ctrl-C.
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.starts_with("Ctrl-C");
        lines.push(line);
        if done {
            break;
        }
    }
    let addrs = addresses(&lines);
    assert_eq!(addrs.len(), 3, "{lines:?}");
    let client = Client::new(addrs, Duration::from_secs(5), Duration::from_secs(60)).unwrap();
    client.put("k/1", "one").await.unwrap();
    client.put("k/2", "two").await.unwrap();
    client.delete("k/1").await.unwrap();
    assert_eq!(client.get("k/2").await.unwrap().as_deref(), Some("two"));
    assert_eq!(client.get("k/1").await.unwrap(), None);
    let scan = client.scan("k/", 10).await.unwrap();
    assert_eq!(scan, vec![("k/2".to_owned(), "two".to_owned())]);
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: the child is not yet reaped, so the pid still names it.
    unsafe { libc::kill(pid, libc::SIGINT) };
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_prints_a_row() {
    let out = wafer()
        .args(["raft", "bench", "--nodes", "1", "--seconds", "1", "--clients", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let row: Vec<&str> = text.lines().last().unwrap().split('|').map(str::trim).collect();
    // | nodes | clients | value B | writes/s | ... | reads/s | ...
    assert_eq!(&row[1..3], &["1", "2"], "{text}");
    let writes: f64 = row[4].parse().unwrap();
    let reads: f64 = row[7].parse().unwrap();
    assert!(writes > 0.0 && reads > 0.0, "{text}");
}
